"""``FileCheckpointStorage``: one append-only, checksummed log per checkpoint, one fsync per commit.

Layout under ``root``: a folder per checkpoint named ``safe_name(checkpoint_id)`` holding
``log`` (see ``_log``) and a permanent ``lock`` file. A commit appends the part bytes the log
lacks, the snapshot's part list and its header - which implicitly makes it the head - in one
write and one fsync; the compare-and-swap on the head runs under an ``asyncio.Lock`` per
(root, id) and an exclusive ``flock`` taken in a worker thread, so it holds within and across
processes. Each instance keeps an index of every log it read (``_index``) and extends it with
what was appended since, after checking the file is still the one it indexed, so a load reads
the head's parts and the new records only; older snapshots' parts are read when their state
is. Reads take a shared ``flock`` on a lock file opened read-only (or none), so they work on a
read-only store. A prune appends a record of what it removed and rewrites the log only when
most of it is dead. This module must never silently skip a damaged record or substitute an
older head, and never write outside ``root``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from checkflow._fs import (
    LoopLocks,
    PathMemo,
    atomic_write,
    exclusive_lock,
    fsync_directory,
    os_errors_as,
    safe_name,
    shared_lock,
)
from checkflow.checkpoints import (
    Checkpoint,
    CheckpointSnapshot,
    EncodedPart,
    Format,
    SnapshotRecord,
)
from checkflow.errors import (
    CheckpointConflictError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    StorageError,
)
from checkflow.storage import _chunks, _index, _log
from checkflow.storage._graph import unreachable
from checkflow.storage._verify import VerifyReport
from checkflow.storage._verify_file import verify_log

__all__ = ["FileCheckpointStorage"]

_LOG, _LOCK = "log", "lock"
_COMPACT_MIN_BYTES = 1 << 16  # never rewrite a log smaller than this for its dead records
logger = logging.getLogger("checkflow.storage")
# Per (root, checkpoint id), so every instance on one root shares them.
_LOCKS: LoopLocks[tuple[str, str]] = LoopLocks()


@dataclass(frozen=True, slots=True)
class _Files:
    """A checkpoint's folder and the files in it, named once (``PathMemo``)."""

    folder: Path
    log: Path
    lock: Path
    source: str  # the log's path as text: for os.open, errors and the index


def _files_of(root: Path, checkpoint_id: str) -> _Files:
    folder = root / safe_name(checkpoint_id)
    log = folder / _LOG
    return _Files(folder, log, folder / _LOCK, str(log))


def _address(
    data: bytes, fmt: str, previous: _index.Recent | None
) -> tuple[str, _index.Pieces]:
    """A part's address and its pieces with theirs, hashing each byte once (see ``_log``).

    With ``previous`` (the part this instance last committed in the same place) the pieces
    both share are neither cut nor hashed again (``_chunks.recut``).
    """
    digest = _log.content_digest
    old: _index.Pieces = [] if previous is None else previous[2]
    if len(data) <= _chunks.MIN_CHUNKED:  # most parts: stored whole, no cut to look for
        ends, kept, tail = [len(data)], 0, 0
    elif len(old) > 1 and previous is not None:
        ends, kept, tail = _chunks.recut(data, fmt, previous[0], [end for _, _, end in old])
    else:
        ends, kept, tail = _chunks.cut_ends(data, fmt), 0, 0
    if len(ends) == 1:
        return digest(data), [("", 0, len(data))]
    pieces: _index.Pieces = []
    start = 0
    for n, end in enumerate(ends[: len(ends) - tail]):
        pieces.append((old[n][0] if n < kept else digest(data[start:end]), start, end))
        start = end
    if tail:
        shift = len(data) - old[-1][2]
        pieces += [(d, begin + shift, end + shift) for d, begin, end in old[-tail:]]
    return _log.pieces_digest([d for d, _, _ in pieces]), pieces


class _IndexCache:
    """A bounded, thread-safe LRU of indexes: a long-lived storage serves unbounded ids.

    ``lock`` also serializes every change to an index (readers in several threads may
    extend the same one).
    """

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._indexes: OrderedDict[str, _index.Index] = OrderedDict()
        self.lock = threading.RLock()

    def __contains__(self, checkpoint_id: str) -> bool:
        return checkpoint_id in self._indexes

    def get(self, checkpoint_id: str) -> _index.Index | None:
        with self.lock:
            index = self._indexes.get(checkpoint_id)
            if index is not None:
                self._indexes.move_to_end(checkpoint_id)
            return index

    def put(self, checkpoint_id: str, index: _index.Index | None) -> None:
        with self.lock:
            if index is None:
                self._indexes.pop(checkpoint_id, None)
                return
            self._indexes[checkpoint_id] = index
            self._indexes.move_to_end(checkpoint_id)
            while len(self._indexes) > self._size:
                self._indexes.popitem(last=False)

    def extend(self, fd: int, checkpoint_id: str, source: str) -> _index.Index | None:
        """The up-to-date index of the log behind ``fd`` (cached for the next call)."""
        with self.lock:
            index = _index.extend(fd, self.get(checkpoint_id), source=source,
                                  checkpoint_id=checkpoint_id)
            self.put(checkpoint_id, index)
            return index


class FileCheckpointStorage:
    """Checkpoints as files under ``root``; ``format`` ("json" or "msgpack") encodes new state."""

    def __init__(self, root: str | os.PathLike[str], *, format: Format = "json") -> None:
        if format not in ("json", "msgpack"):
            raise ValueError(f"format must be 'json' or 'msgpack', not {format!r}")
        self.root = Path(root).resolve()
        self._root_text = str(self.root)
        self.format: Format = format
        self._indexes = _IndexCache()
        self._files = PathMemo(functools.partial(_files_of, self.root))

    def __repr__(self) -> str:
        return f"FileCheckpointStorage({str(self.root)!r}, format={self.format!r})"

    # -- the protocol --------------------------------------------------------------------

    async def commit_snapshot(
        self,
        checkpoint: Checkpoint,
        snapshot: CheckpointSnapshot,
        *,
        expected_head_snapshot_id: str | None,
    ) -> None:
        """Append ``snapshot`` as the new head if the head is still the expected one."""
        cid = checkpoint.checkpoint_id
        identity = (checkpoint.workflow_name, checkpoint.graph_signature_hash)
        async with self._lock(cid):
            with self._faults("commit", cid):
                await asyncio.to_thread(
                    self._commit_sync, cid, snapshot.record, expected_head_snapshot_id, identity
                )

    def checkpoint_exists(self, checkpoint_id: str) -> bool:
        """Whether the log of ``checkpoint_id`` holds a committed checkpoint (``ExistenceCheck``).

        A stat and a few header reads, as ``list_checkpoint_ids`` does per entry: cheap enough
        to answer in the caller's thread.
        """
        return _index.committed_id(self._files(checkpoint_id).log) == checkpoint_id

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Index the log, read and verify the head's parts, and attach the checkpoint here.

        Older snapshots' parts are read (and checked) when their state is first read;
        unregistered types fail at ``state`` access. Reading never opens anything for
        writing, so it works on a read-only store. Snapshots are immutable, so loads by one
        instance share them (and a head this instance wrote or verified is not read again).
        """
        with self._faults("load", checkpoint_id):
            loaded = await asyncio.to_thread(self._load_sync, checkpoint_id)
        cid, last, snapshots, pruned = loaded
        try:
            return Checkpoint(
                cid,
                workflow_name=last.workflow_name,
                graph_signature_hash=last.graph_signature_hash,
                snapshots=snapshots,
                head_snapshot_id=last.snapshot_id,
                checkpoint_storage=self,
                pruned_snapshot_ids=pruned,
            )
        except CorruptCheckpointError as exc:
            raise CorruptCheckpointError(str(exc), source=self._source(checkpoint_id)) from exc

    async def delete(self, checkpoint_id: str) -> None:
        """Remove the checkpoint's log (the lock file stays: other processes may hold it)."""
        async with self._lock(checkpoint_id):
            with self._faults("delete", checkpoint_id):
                await asyncio.to_thread(self._delete_sync, checkpoint_id)

    async def list_checkpoint_ids(self) -> list[str]:
        """The ids of every checkpoint with a committed snapshot under ``root``, sorted."""
        with self._faults("list", None):
            return await asyncio.to_thread(self._list_sync)

    async def prune(self, checkpoint_id: str, *, keep: Iterable[str]) -> list[str]:
        """Drop snapshots off the lineages of ``keep`` and the head; record it, maybe compact."""
        keep = list(keep)
        async with self._lock(checkpoint_id):
            with self._faults("prune", checkpoint_id):
                return await asyncio.to_thread(self._prune_sync, checkpoint_id, keep)

    async def verify(self, checkpoint_id: str | None = None, *,
                     progress: Callable[[str, int, int], None] | None = None
                     ) -> list[VerifyReport]:
        """Read every record of every (or one) checkpoint; report what is wrong, fix nothing.

        ``CheckpointNotFoundError`` for an unknown ``checkpoint_id``. Takes no write lock.
        ``progress(what, done, total)`` is told of each checkpoint read (from a worker thread).
        """
        with self._faults("verify", checkpoint_id):
            return await asyncio.to_thread(self._verify_sync, checkpoint_id, progress)

    # -- worker-thread halves --------------------------------------------------------------

    def _commit_sync(
        self,
        checkpoint_id: str,
        record: SnapshotRecord,
        expected: str | None,
        identity: tuple[str, str],
    ) -> None:
        files = self._files(checkpoint_id)
        folder, path, source = files.folder, files.log, files.source
        created = checkpoint_id not in self._indexes and not folder.exists()
        if created:
            folder.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(files.lock):
            fd = os.open(source, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                index = self._indexes.extend(fd, checkpoint_id, source)
                if index is not None and index.version == 1:  # rewritten as version 2 first
                    os.close(fd)
                    fd = -1
                    self._rewrite(path, index)
                    fd = os.open(source, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
                    index = self._indexes.extend(fd, checkpoint_id, source)
                actual = index.head if index is not None else None
                if actual != expected:
                    raise CheckpointConflictError(
                        checkpoint_id,
                        expected_head_snapshot_id=expected,
                        actual_head_snapshot_id=actual,
                    )
                # (the index was brought up to the file's size under this lock)
                size = index.end + index.torn if index is not None else os.fstat(fd).st_size
                end = index.end if index is not None else 0
                if size > end:
                    _warn_torn(source, size - end, "dropping")
                    os.ftruncate(fd, end)  # a crashed writer's torn records: never append after
                fresh = index is None
                if index is None:
                    index = self._new_index(checkpoint_id, fd)
                self._append_commit(fd, index, record, identity, source)
                self._indexes.put(checkpoint_id, index)
            except BaseException:
                self._indexes.put(checkpoint_id, None)  # re-read next time, trust nothing
                raise
            finally:
                if fd >= 0:
                    os.close(fd)
        if fresh:  # a new log: make its directory entries durable too
            fsync_directory(folder)
            if created:
                fsync_directory(self.root)

    def _writable_index(self, checkpoint_id: str, path: Path) -> _index.Index | None:
        """The log's index, after rewriting a version 1 log as version 2 (caller has the flock)."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            index = self._indexes.extend(fd, checkpoint_id, str(path))
        finally:
            os.close(fd)
        if index is not None and index.version == 1:
            self._rewrite(path, index)
            index = None
        return index

    def _new_index(self, checkpoint_id: str, fd: int) -> _index.Index:
        """Start a fresh version 2 log in the empty file behind ``fd``."""
        payload = _log.encode_header(checkpoint_id, self.format)
        start = _append_durably(fd, _log.frame(payload), sync=False, start=0)
        st = os.fstat(fd)
        return _index.Index(checkpoint_id, self.format, _log.LOG_VERSION, (st.st_dev, st.st_ino),
                            end=start + _log.FRAME_OVERHEAD + len(payload), last_at=start,
                            last_frame=_log.frame_head(payload))

    def _append_commit(
        self,
        fd: int,
        index: _index.Index,
        record: SnapshotRecord,
        identity: tuple[str, str],
        source: str,
    ) -> None:
        """Append the parts the log lacks, the part list and the header; fsync; index them."""
        fmt = index.format
        refs: dict[str, dict[str, str]] = {}
        new: dict[str, tuple[bytes, _index.Pieces]] = {}
        recent: dict[tuple[str, str], _index.Recent] = {}
        for bucket, values in record.parts.items():
            bucket_refs = refs[bucket] = {}
            for key, data in values.items():
                data = EncodedPart(data, record.format).reencoded(fmt)  # type: ignore[arg-type]
                previous = index.recent.get((bucket, key))
                # Comparing with the previous snapshot's bytes is far cheaper than hashing them.
                if previous is not None and previous[0] == data:
                    digest, pieces = previous[1], previous[2]
                else:
                    digest, pieces = _address(data, fmt, previous)
                    if digest not in index.blobs and digest not in index.memory:
                        new.setdefault(digest, (data, pieces))
                bucket_refs[key] = digest
                recent[(bucket, key)] = (data, digest, pieces)
        header = _log.CommitHeader(**record.header(), workflow_name=identity[0],
                                   graph_signature_hash=identity[1])
        stored: list[tuple[str, bytes]] = []  # (digest, B or T payload) in writing order
        seen: set[str] = set()

        def known(digest: str) -> bool:
            return digest in seen or digest in index.blobs or digest in index.memory

        for digest, (data, pieces) in new.items():
            stored += _part_payloads(digest, data, pieces, known, seen)
        payloads = [p for _, p in stored]
        payloads += [_log.refs_payload(refs, fmt), _log.commit_payload(header, fmt)]
        frames = [_log.frame(p) for p in payloads]
        start = _append_durably(fd, b"".join(frames), start=index.end)
        pos = start
        for (digest, payload), frame in zip(stored, frames, strict=False):
            index.blobs[digest] = (pos, len(payload))
            pos += len(frame)
        refs_at, commit_at = pos, pos + len(frames[-2])
        old_head = index.commits.get(index.head or "")
        if old_head is not None:  # only the head's parts stay in memory
            old_head.snapshot, old_head.verified = None, False
        entry = index.commits[record.snapshot_id] = _index.Entry(header, refs_at=refs_at)
        if record.format == fmt:  # what this instance wrote needs no reading back
            entry.snapshot = CheckpointSnapshot.from_record(record, source=source)
            entry.verified = True
        index.end = commit_at + len(frames[-1])
        index.last_at, index.last_frame = commit_at, frames[-1][: _log.HEAD_SIZE]
        index.recent = recent

    def _load_sync(
        self, checkpoint_id: str
    ) -> tuple[str, _log.CommitHeader, list[CheckpointSnapshot], frozenset[str]]:
        files = self._files(checkpoint_id)
        source = files.source
        with shared_lock(files.lock):
            try:
                fd = os.open(source, os.O_RDONLY)
            except FileNotFoundError:
                raise CheckpointNotFoundError(checkpoint_id) from None
            try:
                with self._indexes.lock:
                    index = self._indexes.extend(fd, checkpoint_id, source)
                    if index is None:
                        raise CheckpointNotFoundError(checkpoint_id)
                    if index.torn:
                        _warn_torn(source, index.torn, "ignoring")
                    entry = index.commits[index.head or ""]
                    fmt: Format = "json" if index.format == "json" else "msgpack"
                    head = entry.snapshot if entry.verified else None
                    if head is None:
                        parts = _index.parts_of(fd, index, entry, source)
                        record = SnapshotRecord.from_header(entry.header, format=fmt,
                                                            parts=parts)
                        head = CheckpointSnapshot.from_record(record, source=source)
                    snapshots = [self._shared(checkpoint_id, e, fmt, source)
                                 for e in index.live() if e is not entry]
                    snapshots.append(head)
                    found = (index.checkpoint_id, entry.header, snapshots,
                             frozenset(index.pruned))
            finally:
                os.close(fd)
        if not entry.verified:
            head.verify()  # a damaged head fails here, not mid-run
            with self._indexes.lock:
                entry.snapshot, entry.verified = head, True
        return found

    def _shared(
        self, checkpoint_id: str, entry: _index.Entry, fmt: Format, source: str
    ) -> CheckpointSnapshot:
        """A deferred snapshot of an older entry (made afresh: once read it holds its parts,
        and only the head's are kept in the index)."""
        return CheckpointSnapshot.deferred(
            entry.header, format=fmt, source=source,
            fetch=self._fetcher(checkpoint_id, entry.header.snapshot_id))

    def _fetcher(
        self, checkpoint_id: str, snapshot_id: str
    ) -> Callable[[], dict[str, dict[str, bytes]]]:
        """Reads one snapshot's parts when its state is first wanted (no lock: see below)."""

        def fetch() -> dict[str, dict[str, bytes]]:
            # Committed records are never changed in place (a compaction is a new file, which
            # the index notices), so this read needs no lock and never blocks on a writer.
            source = self._source(checkpoint_id)
            with self._faults("read", checkpoint_id):
                try:
                    fd = os.open(source, os.O_RDONLY)
                except FileNotFoundError:
                    raise CheckpointNotFoundError(checkpoint_id) from None
                try:
                    with self._indexes.lock:
                        index = self._indexes.extend(fd, checkpoint_id, source)
                        entry = index.commits.get(snapshot_id) if index is not None else None
                        if index is None or entry is None or snapshot_id in index.pruned:
                            raise CorruptCheckpointError(
                                f"snapshot {snapshot_id!r} is no longer in the log (pruned "
                                "since the checkpoint was loaded?)", source=source)
                        return _index.parts_of(fd, index, entry, source)
                finally:
                    os.close(fd)

        return fetch

    def _delete_sync(self, checkpoint_id: str) -> None:
        folder = self._folder(checkpoint_id)
        if not (folder / _LOG).exists():
            raise CheckpointNotFoundError(checkpoint_id)
        with exclusive_lock(folder / _LOCK):
            try:
                os.unlink(folder / _LOG)
            except FileNotFoundError:
                raise CheckpointNotFoundError(checkpoint_id) from None
            fsync_directory(folder)
            self._indexes.put(checkpoint_id, None)

    def _list_sync(self) -> list[str]:
        if not self.root.is_dir():
            return []
        ids = (_index.committed_id(folder / _LOG) for folder in self.root.iterdir())
        return sorted(i for i in ids if i is not None)

    def _prune_sync(self, checkpoint_id: str, keep: list[str]) -> list[str]:
        folder = self._folder(checkpoint_id)
        path = folder / _LOG
        if not path.exists():
            raise CheckpointNotFoundError(checkpoint_id)
        with exclusive_lock(folder / _LOCK):
            if self._writable_index(checkpoint_id, path) is None and not path.exists():
                raise CheckpointNotFoundError(checkpoint_id)
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
            try:
                index = self._indexes.extend(fd, checkpoint_id, str(path))
                if index is None:
                    raise CheckpointNotFoundError(checkpoint_id)
                parents = {e.header.snapshot_id: e.header.parent_snapshot_id
                           for e in index.live()}
                removed = unreachable(checkpoint_id, parents, head=index.head, keep=keep)
                if not removed:
                    return removed
                size = os.fstat(fd).st_size
                if size > index.end:
                    os.ftruncate(fd, index.end)
                payload = _log.prune_payload(removed, index.format)
                start = _append_durably(fd, _log.frame(payload))
                index.pruned.update(removed)
                index.end = start + _log.FRAME_OVERHEAD + len(payload)
                index.last_at, index.last_frame = start, _log.frame_head(payload)
            except BaseException:
                self._indexes.put(checkpoint_id, None)
                raise
            finally:
                os.close(fd)
            if index.end >= _COMPACT_MIN_BYTES:
                self._rewrite(path, index, only_if_half_dead=True)
            return removed

    def _rewrite(
        self, path: Path, index: _index.Index, *, only_if_half_dead: bool = False
    ) -> None:
        """Replace the log with a version 2 one holding only the live snapshots (under flock).

        With ``only_if_half_dead`` the log is kept unless the rewrite is under half its size.
        """
        fmt = index.format
        fd = os.open(path, os.O_RDONLY)
        try:
            chunks = [_log.frame(_log.encode_header(index.checkpoint_id, fmt,
                                                    sorted(index.pruned)))]
            written: set[str] = set()
            for entry in index.live():
                parts = _index.parts_of(fd, index, entry, str(path))
                refs: dict[str, dict[str, str]] = {}
                for bucket, values in parts.items():
                    refs[bucket] = {}
                    for key, data in values.items():
                        digest, pieces = _address(data, fmt, None)
                        refs[bucket][key] = digest
                        if digest not in written:
                            chunks += (_log.frame(p) for _, p in _part_payloads(
                                digest, data, pieces, written.__contains__, written))
                chunks.append(_log.frame(_log.refs_payload(refs, fmt)))
                chunks.append(_log.frame(_log.commit_payload(entry.header, fmt)))
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if only_if_half_dead and len(data) * 2 > index.end:
            return
        atomic_write(path, data)
        self._indexes.put(index.checkpoint_id, None)

    def _verify_sync(self, checkpoint_id: str | None,
                     progress: Callable[[str, int, int], None] | None = None
                     ) -> list[VerifyReport]:
        if checkpoint_id is not None:
            if not (self._folder(checkpoint_id) / _LOG).exists():
                raise CheckpointNotFoundError(checkpoint_id)
            return [self._verify_one(checkpoint_id, self._folder(checkpoint_id) / _LOG)]
        if not self.root.is_dir():
            return []
        reports = []
        logs = [(f.name, f / _LOG) for f in sorted(self.root.iterdir()) if (f / _LOG).is_file()]
        for done, (name, path) in enumerate(logs):
            if progress is not None:
                progress("verifying checkpoints", done, len(logs))
            reports.append(self._verify_one(name, path))
        if progress is not None and logs:
            progress("verifying checkpoints", len(logs), len(logs))
        return sorted(reports, key=lambda report: report.checkpoint_id)

    def _verify_one(self, fallback_id: str, path: Path) -> VerifyReport:
        with shared_lock(path.parent / _LOCK):
            data = path.read_bytes()
        return verify_log(data, source=str(path), fallback_id=fallback_id)

    # -- folders and locks -----------------------------------------------------------------

    def _folder(self, checkpoint_id: str) -> Path:
        return self._files(checkpoint_id).folder

    def _source(self, checkpoint_id: str) -> str:
        return self._files(checkpoint_id).source

    def _lock(self, checkpoint_id: str) -> asyncio.Lock:
        return _LOCKS((self._root_text, checkpoint_id))

    def _faults(
        self, operation: str, checkpoint_id: str | None
    ) -> contextlib.AbstractContextManager[None]:
        """Disk faults (full, read-only, I/O) as typed ``StorageError``s naming the folder
        (named only when one happens: this wraps every commit)."""
        return os_errors_as(
            lambda exc: StorageError.from_os_error(
                exc, operation=f"checkpoint {operation}",
                resource=str(self.root if checkpoint_id is None else self._folder(checkpoint_id)),
            )
        )


def _part_payloads(
    digest: str,
    data: bytes,
    pieces: _index.Pieces,
    known: Callable[[str], bool],
    seen: set[str],
) -> list[tuple[str, bytes]]:
    """The ``B`` (and, for a big part, ``T``) records storing ``data`` (see ``_address``).

    Pieces the log already holds (``known``) are not written again; ``seen`` collects every
    hash written, so one commit never writes a piece twice.
    """
    seen.add(digest)
    if len(pieces) == 1:
        return [(digest, _log.blob_payload(digest, data))]
    out: list[tuple[str, bytes]] = []
    for piece_digest, start, end in pieces:
        if not known(piece_digest):
            seen.add(piece_digest)
            out.append((piece_digest, _log.blob_payload(piece_digest, data[start:end])))
    out.append((digest, _log.pieces_payload(digest, [d for d, _, _ in pieces])))
    return out


def _warn_torn(source: str, size: int, action: str) -> None:
    logger.warning(
        "%s a torn tail of %d bytes at the end of %s (a write that never completed)",
        action,
        size,
        source,
    )


def _append_durably(fd: int, data: bytes, *, sync: bool = True, start: int | None = None
                    ) -> int:
    """Append ``data`` and fsync; return where it starts (``start``: the file's size, when
    the caller knows it). On failure, cut it off again."""
    if start is None:
        start = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    except BaseException:
        with contextlib.suppress(OSError):  # best effort: the next writer also truncates
            os.ftruncate(fd, start)
        raise
    return start

