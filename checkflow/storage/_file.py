"""``FileCheckpointStorage``: one append-only, checksummed log per checkpoint, one fsync per commit.

Layout under ``root``: a folder per checkpoint named ``safe_name(checkpoint_id)`` holding
``log`` (see ``_log``) and a permanent ``lock`` file. A commit appends one record - the
snapshot, the part bytes the log lacks, and implicitly the new head - and fsyncs once; the
compare-and-swap on the head runs under an ``asyncio.Lock`` per (root, id) and an ``flock``
taken in a worker thread, so it holds within and across processes. Each instance caches the
log's end, head and known part hashes per checkpoint and re-validates them under the flock
(inode, size and a fingerprint of the last record), so it never trusts a cache another process
may have outdated. This module
must never silently skip a damaged record or substitute an older head.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from checkflow._fs import (
    LoopLocks,
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
    CheckflowError,
    CheckpointConflictError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    StorageError,
)
from checkflow.storage import _log
from checkflow.storage._graph import unreachable
from checkflow.storage._verify import VerifyReport, check_records

__all__ = ["FileCheckpointStorage"]

_LOG, _LOCK = "log", "lock"
logger = logging.getLogger("checkflow.storage")
# Per (root, checkpoint id), so every instance on one root shares them.
_LOCKS: LoopLocks[tuple[str, str]] = LoopLocks()


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass
class _Tail:
    """What this instance knows about one log, trusted only while its last record is unchanged.

    ``last_at``/``last_frame`` locate and fingerprint the last record, so a log another
    process grew, compacted or deleted and re-created (even on a reused inode) is re-read.
    """

    inode: tuple[int, int]
    end: int
    last_at: int
    last_frame: bytes
    format: str
    head: str
    known: set[str] = field(default_factory=set)
    recent: dict[tuple[str, str], tuple[bytes, str]] = field(default_factory=dict)


class _TailCache:
    """A bounded, thread-safe LRU of tails: a long-lived storage serves unbounded ids."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._tails: OrderedDict[str, _Tail] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, checkpoint_id: str) -> bool:
        return checkpoint_id in self._tails

    def get(self, checkpoint_id: str) -> _Tail | None:
        with self._lock:
            tail = self._tails.get(checkpoint_id)
            if tail is not None:
                self._tails.move_to_end(checkpoint_id)
            return tail

    def put(self, checkpoint_id: str, tail: _Tail) -> None:
        with self._lock:
            self._tails[checkpoint_id] = tail
            self._tails.move_to_end(checkpoint_id)
            while len(self._tails) > self._size:
                self._tails.popitem(last=False)

    def pop(self, checkpoint_id: str) -> None:
        with self._lock:
            self._tails.pop(checkpoint_id, None)


@dataclass
class _Loaded:
    header: _log.LogHeader
    commits: list[_log.CommitRecord]
    blobs: dict[str, bytes]
    torn_tail_bytes: int = 0


class FileCheckpointStorage:
    """Checkpoints as files under ``root``; ``format`` ("json" or "msgpack") encodes new state."""

    def __init__(self, root: str | os.PathLike[str], *, format: Format = "json") -> None:
        if format not in ("json", "msgpack"):
            raise ValueError(f"format must be 'json' or 'msgpack', not {format!r}")
        self.root = Path(root).resolve()
        self.format: Format = format
        self._tails = _TailCache()

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
        async with self._lock(checkpoint.checkpoint_id):
            with self._faults("commit", checkpoint.checkpoint_id):
                await asyncio.to_thread(
                    self._commit_sync,
                    checkpoint.checkpoint_id,
                    snapshot.record,
                    expected_head_snapshot_id,
                    (checkpoint.workflow_name, checkpoint.graph_signature_hash),
                )

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Read the log, verify the head's bytes are intact, and attach the checkpoint here.

        Older snapshots are checked when read; unregistered types fail at ``state`` access.
        Reading never opens anything for writing, so it works on a read-only store.
        """
        with self._faults("load", checkpoint_id):
            loaded = await asyncio.to_thread(self._load_sync, checkpoint_id)
        source = str(self._folder(checkpoint_id) / _LOG)
        fmt: Format = "json" if loaded.header.format == "json" else "msgpack"
        snapshots = [_snapshot(c, loaded.blobs, fmt, source) for c in loaded.commits]
        last = loaded.commits[-1]
        try:
            checkpoint = Checkpoint(
                loaded.header.checkpoint_id,
                workflow_name=last.workflow_name,
                graph_signature_hash=last.graph_signature_hash,
                snapshots=snapshots,
                head_snapshot_id=last.snapshot_id,
                checkpoint_storage=self,
                pruned_snapshot_ids=loaded.header.pruned,
            )
        except CorruptCheckpointError as exc:
            raise CorruptCheckpointError(str(exc), source=source) from exc
        snapshots[-1].verify()  # a damaged head fails here, not mid-run
        return checkpoint

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
        """Drop snapshots off the lineages of ``keep`` and the head, compacting the log."""
        keep = list(keep)
        async with self._lock(checkpoint_id):
            with self._faults("prune", checkpoint_id):
                return await asyncio.to_thread(self._prune_sync, checkpoint_id, keep)

    async def verify(self, checkpoint_id: str | None = None) -> list[VerifyReport]:
        """Read every record of every (or one) checkpoint; report what is wrong, fix nothing.

        ``CheckpointNotFoundError`` for an unknown ``checkpoint_id``. Takes no write lock.
        """
        with self._faults("verify", checkpoint_id):
            return await asyncio.to_thread(self._verify_sync, checkpoint_id)

    # -- worker-thread halves --------------------------------------------------------------

    def _commit_sync(
        self,
        checkpoint_id: str,
        record: SnapshotRecord,
        expected: str | None,
        identity: tuple[str, str],
    ) -> None:
        folder = self._folder(checkpoint_id)
        created = checkpoint_id not in self._tails and not folder.exists()
        if created:
            folder.mkdir(parents=True, exist_ok=True)
        path = folder / _LOG
        with exclusive_lock(folder / _LOCK):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                tail = self._validated_tail(checkpoint_id, fd, str(path))
                actual = tail.head if tail is not None else None
                if actual != expected:
                    raise CheckpointConflictError(
                        checkpoint_id,
                        expected_head_snapshot_id=expected,
                        actual_head_snapshot_id=actual,
                    )
                fmt = tail.format if tail is not None else self.format
                commit, recent = _commit_record(record, tail, fmt, identity)
                payload = _log.encode_commit(commit, fmt)
                header = (
                    b"" if tail is not None else _log.frame(_log.encode_header(checkpoint_id, fmt))
                )
                start = _append_durably(fd, header + _log.frame(payload)) + len(header)
                inode = _inode(os.fstat(fd))
            finally:
                os.close(fd)
        if tail is None:  # a new log: make its directory entries durable too
            fsync_directory(folder)
            if created:
                fsync_directory(self.root)
        known = (tail.known if tail is not None else set()) | set(commit.blobs)
        self._tails.put(
            checkpoint_id,
            _Tail(
                inode,
                end=start + _log.FRAME_OVERHEAD + len(payload),
                last_at=start,
                last_frame=_log.frame_head(payload),
                format=fmt,
                head=record.snapshot_id,
                known=known,
                recent=recent,
            ),
        )

    def _validated_tail(self, checkpoint_id: str, fd: int, source: str) -> _Tail | None:
        """The log's current tail (caller holds the flock); cuts off a torn last record."""
        st = os.fstat(fd)
        tail = self._tails.get(checkpoint_id)
        if (
            tail is None
            or tail.inode != _inode(st)
            or st.st_size < tail.end
            or os.pread(fd, _log.HEAD_SIZE, tail.last_at) != tail.last_frame
        ):
            tail = None  # unknown, replaced or rewritten: read it all
        base = tail.end if tail is not None else 0
        if st.st_size == base and tail is not None:
            return tail
        payloads, valid = _log.scan(
            os.pread(fd, st.st_size - base, base), source=source, offset=base
        )
        tail = _advanced(checkpoint_id, tail, payloads, _inode(st), base + valid, source)
        end = tail.end if tail is not None else 0
        if end < st.st_size:
            _warn_torn(source, st.st_size - end, "dropping")
            os.ftruncate(fd, end)  # a crashed writer's torn record: never append after it
        if tail is None:
            self._tails.pop(checkpoint_id)
        else:
            self._tails.put(checkpoint_id, tail)
        return tail

    def _read(self, checkpoint_id: str) -> _Loaded:
        """Read and check the whole log (caller holds the flock); remember its tail."""
        path = self._folder(checkpoint_id) / _LOG
        source = str(path)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise CheckpointNotFoundError(checkpoint_id) from None
        try:
            st = os.fstat(fd)
            data = os.pread(fd, st.st_size, 0)
        finally:
            os.close(fd)
        payloads, end = _log.scan(data, source=source)
        if end < st.st_size:
            _warn_torn(source, st.st_size - end, "ignoring")
        if not payloads:
            raise CheckpointNotFoundError(checkpoint_id)
        header = _log.decode_header(payloads[0], source=source, checkpoint_id=checkpoint_id)
        if len(payloads) < 2:  # the first commit never completed
            raise CheckpointNotFoundError(checkpoint_id)
        commits = [_log.decode_commit(p, header.format, source=source) for p in payloads[1:]]
        blobs = {digest: bytes(raw) for c in commits for digest, raw in c.blobs.items()}
        last = payloads[-1]
        self._tails.put(
            checkpoint_id,
            _Tail(
                _inode(st),
                end,
                last_at=end - _log.FRAME_OVERHEAD - len(last),
                last_frame=_log.frame_head(last),
                format=header.format,
                head=commits[-1].snapshot_id,
                known=set(blobs),
            ),
        )
        return _Loaded(header, commits, blobs, st.st_size - end)

    def _load_sync(self, checkpoint_id: str) -> _Loaded:
        folder = self._folder(checkpoint_id)
        if not (folder / _LOG).exists():
            raise CheckpointNotFoundError(checkpoint_id)
        with shared_lock(folder / _LOCK):
            return self._read(checkpoint_id)

    def _delete_sync(self, checkpoint_id: str) -> None:
        with self._existing(checkpoint_id) as folder:
            try:
                os.unlink(folder / _LOG)
            except FileNotFoundError:
                raise CheckpointNotFoundError(checkpoint_id) from None
            fsync_directory(folder)
            self._tails.pop(checkpoint_id)

    def _list_sync(self) -> list[str]:
        if not self.root.is_dir():
            return []
        ids = (_log.committed_checkpoint_id(folder / _LOG) for folder in self.root.iterdir())
        return sorted(i for i in ids if i is not None)

    def _prune_sync(self, checkpoint_id: str, keep: list[str]) -> list[str]:
        with self._existing(checkpoint_id) as folder:
            loaded = self._read(checkpoint_id)
            parents = {c.snapshot_id: c.parent_snapshot_id for c in loaded.commits}
            head = loaded.commits[-1].snapshot_id
            removed = unreachable(checkpoint_id, parents, head=head, keep=keep)
            if removed:
                atomic_write(folder / _LOG, _compacted(loaded, set(removed)))
                self._tails.pop(checkpoint_id)
            return removed

    def _verify_sync(self, checkpoint_id: str | None) -> list[VerifyReport]:
        if checkpoint_id is not None:
            if not (self._folder(checkpoint_id) / _LOG).exists():
                raise CheckpointNotFoundError(checkpoint_id)
            return [self._verify_one(checkpoint_id, self._folder(checkpoint_id) / _LOG)]
        if not self.root.is_dir():
            return []
        reports = []
        for folder in sorted(self.root.iterdir()):
            path = folder / _LOG
            if path.is_file():
                reports.append(self._verify_one(_log_owner(path, folder.name), path))
        return sorted(reports, key=lambda report: report.checkpoint_id)

    def _verify_one(self, checkpoint_id: str, path: Path) -> VerifyReport:
        source = str(path)
        with shared_lock(path.parent / _LOCK):
            data = path.read_bytes()
        try:
            payloads, end = _log.scan(data, source=source)
            header = _log.decode_header(payloads[0], source=source) if payloads else None
        except CheckflowError as exc:
            return VerifyReport(checkpoint_id, corrupt=(str(exc),))
        torn = len(data) - end
        if header is None or len(payloads) < 2:
            return VerifyReport(checkpoint_id, torn_tail_bytes=torn or len(data))
        problems: list[str] = []
        commits: list[_log.CommitRecord] = []
        for index, payload in enumerate(payloads[1:], start=1):
            try:
                commits.append(_log.decode_commit(payload, header.format, source=source))
            except CheckflowError as exc:
                problems.append(f"record {index}: {exc}")
        blobs = {digest: bytes(raw) for c in commits for digest, raw in c.blobs.items()}
        records: list[SnapshotRecord] = []
        fmt: Format = "json" if header.format == "json" else "msgpack"
        for commit in commits:
            try:
                records.append(_snapshot(commit, blobs, fmt, source).record)
            except CheckflowError as exc:
                problems.append(str(exc))
        named = {h for c in commits for refs in c.parts.values() for h in refs.values()}
        for digest, raw in blobs.items():
            if _digest(raw) != digest:
                problems.append(f"{source}: state part {digest!r} does not match its hash")
        return check_records(
            header.checkpoint_id,
            commits[-1].snapshot_id if commits else None,
            records,
            source=source,
            torn_tail_bytes=torn,
            corrupt=problems,
            unreachable=sorted(set(blobs) - named),
        )

    # -- folders and locks -----------------------------------------------------------------

    def _folder(self, checkpoint_id: str) -> Path:
        return self.root / safe_name(checkpoint_id)

    @contextlib.contextmanager
    def _existing(self, checkpoint_id: str) -> Iterator[Path]:
        """The folder of a committed checkpoint, under its cross-process lock."""
        folder = self._folder(checkpoint_id)
        if not (folder / _LOG).exists():
            raise CheckpointNotFoundError(checkpoint_id)
        with exclusive_lock(folder / _LOCK):
            yield folder

    def _lock(self, checkpoint_id: str) -> asyncio.Lock:
        return _LOCKS((str(self.root), checkpoint_id))

    def _faults(
        self, operation: str, checkpoint_id: str | None
    ) -> contextlib.AbstractContextManager[None]:
        """Disk faults (full, read-only, I/O) as typed ``StorageError``s naming the folder."""
        resource = str(self.root if checkpoint_id is None else self._folder(checkpoint_id))
        return os_errors_as(
            lambda exc: StorageError.from_os_error(
                exc, operation=f"checkpoint {operation}", resource=resource
            )
        )


def _warn_torn(source: str, size: int, action: str) -> None:
    logger.warning(
        "%s a torn tail of %d bytes at the end of %s (a write that never completed)",
        action,
        size,
        source,
    )


def _log_owner(path: Path, fallback: str) -> str:
    """The checkpoint id a log's header names (the folder name when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            payloads, _ = _log.scan(handle.read(65536), source=str(path))
        return _log.decode_header(payloads[0], source=str(path)).checkpoint_id
    except (CheckflowError, IndexError):
        return fallback


def _inode(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _append_durably(fd: int, data: bytes) -> int:
    """Append ``data`` and fsync; return where it starts. On failure, cut it off again."""
    start = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        with contextlib.suppress(OSError):  # best effort: the next writer also truncates
            os.ftruncate(fd, start)
        raise
    return start


def _advanced(
    checkpoint_id: str,
    tail: _Tail | None,
    payloads: list[bytes],
    inode: tuple[int, int],
    end: int,
    source: str,
) -> _Tail | None:
    """``tail`` moved past the complete records ``payloads``; None while no commit exists."""
    if tail is None:
        if not payloads:
            return None
        header = _log.decode_header(payloads[0], source=source, checkpoint_id=checkpoint_id)
        if len(payloads) < 2:
            return None  # the first commit never completed
        fmt, head, known = header.format, "", set()
        payloads = payloads[1:]
    else:
        if not payloads:
            return tail
        fmt, head, known = tail.format, tail.head, tail.known
    for payload in payloads:
        commit = _log.decode_commit(payload, fmt, source=source)
        head = commit.snapshot_id
        known.update(commit.blobs)
    last = payloads[-1]
    last_at = end - _log.FRAME_OVERHEAD - len(last)
    recent = tail.recent if tail is not None else {}
    return _Tail(inode, end, last_at, _log.frame_head(last), fmt, head, known, recent)


def _commit_record(
    record: SnapshotRecord, tail: _Tail | None, fmt: str, identity: tuple[str, str]
) -> tuple[_log.CommitRecord, dict[tuple[str, str], tuple[bytes, str]]]:
    """The log record for ``record``: part hashes, plus the bytes of parts new to the log."""
    refs: dict[str, dict[str, str]] = {}
    blobs: dict[str, msgspec.Raw] = {}
    recent: dict[tuple[str, str], tuple[bytes, str]] = {}
    for bucket, values in record.parts.items():
        bucket_refs = refs[bucket] = {}
        for key, data in values.items():
            data = EncodedPart(data, record.format).reencoded(fmt)  # type: ignore[arg-type]
            previous = tail.recent.get((bucket, key)) if tail is not None else None
            # Comparing with the previous snapshot's bytes is far cheaper than hashing them.
            digest = previous[1] if previous is not None and previous[0] == data else _digest(data)
            bucket_refs[key] = digest
            recent[(bucket, key)] = (data, digest)
            if (tail is None or digest not in tail.known) and digest not in blobs:
                blobs[digest] = msgspec.Raw(data)
    commit = _log.CommitRecord(
        **record.header(),
        parts=refs,
        blobs=blobs,
        workflow_name=identity[0],
        graph_signature_hash=identity[1],
    )
    return commit, recent


def _snapshot(
    commit: _log.CommitRecord, blobs: dict[str, bytes], fmt: Format, source: str
) -> CheckpointSnapshot:
    try:
        parts = {b: {k: blobs[h] for k, h in refs.items()} for b, refs in commit.parts.items()}
    except KeyError as exc:
        raise CorruptCheckpointError(
            f"snapshot {commit.snapshot_id!r} names state part {exc.args[0]!r}, "
            "which the log does not hold",
            source=source,
        ) from None
    record = SnapshotRecord.from_header(commit, format=fmt, parts=parts)
    return CheckpointSnapshot.from_record(record, source=source)


def _compacted(loaded: _Loaded, removed: set[str]) -> bytes:
    """A fresh log holding only the surviving commits, each part's bytes written once."""
    fmt = loaded.header.format
    pruned = sorted(set(loaded.header.pruned) | removed)
    chunks = [_log.frame(_log.encode_header(loaded.header.checkpoint_id, fmt, pruned))]
    written: set[str] = set()
    for commit in loaded.commits:
        if commit.snapshot_id in removed:
            continue
        needed = {h for refs in commit.parts.values() for h in refs.values()} - written
        blobs = {h: msgspec.Raw(loaded.blobs[h]) for h in sorted(needed)}
        written |= needed
        chunks.append(
            _log.frame(_log.encode_commit(msgspec.structs.replace(commit, blobs=blobs), fmt))
        )
    return b"".join(chunks)
