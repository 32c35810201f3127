"""The in-memory index of one checkpoint log: where every committed record and part lies.

Built by walking the frame headers (``pread`` of a few bytes each) and reading only the small
``C`` and ``P`` records of a version 2 log, then extended incrementally as the log grows: a
load costs what the head needs plus the records appended since, never a read of the whole
history. A version 1 log (one record per commit, parts inline) has no such structure and is
read whole, its parts held in memory. Blob and ``R`` records are checksummed when they are
read. This module reads file descriptors it is given; it never opens, locks or writes.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any

from checkflow.errors import CorruptCheckpointError
from checkflow.storage import _log

__all__ = ["Entry", "Index", "extend", "parts_of", "read_frame"]

_HEAD = struct.Struct("<4sIII")
_PEEK = _log.HEAD_SIZE + 1 + _log.DIGEST_SIZE  # frame header, kind, a blob's digest
_END = len(_log.END)


Pieces = list[tuple[str, int, int]]
"""A part's pieces as (address, start, end) in its bytes."""
Recent = tuple[bytes, str, Pieces]


@dataclass
class Entry:
    """One committed snapshot: its header and where its part hashes are (or the hashes)."""

    header: _log.CommitHeader
    refs_at: int = -1  # the R frame's offset (version 2)
    refs: dict[str, dict[str, str]] | None = None  # version 1: held in memory
    snapshot: Any = None  # the head's CheckpointSnapshot, shared by loads (it is immutable)
    verified: bool = False  # its parts are in memory and were checked (or written here)


@dataclass
class Index:
    """What a reader knows about one log; trusted only while its last record is unchanged."""

    checkpoint_id: str
    format: str
    version: int
    inode: tuple[int, int]
    end: int = 0  # where the committed log ends (after the last C or P record)
    last_at: int = 0  # the last committed frame, and its header as a fingerprint
    last_frame: bytes = b""
    commits: dict[str, Entry] = field(default_factory=dict)
    blobs: dict[str, tuple[int, int]] = field(default_factory=dict)  # digest -> (frame, size)
    memory: dict[str, bytes] = field(default_factory=dict)  # version 1 parts
    pruned: set[str] = field(default_factory=set)
    header_pruned: list[str] = field(default_factory=list)
    torn: int = 0  # bytes past ``end`` when last scanned
    # (bucket, key) -> the bytes, address and pieces (see _file._address) of the part this
    # instance last committed there: an unchanged part is not hashed, a changed one is recut
    recent: dict[tuple[str, str], Recent] = field(default_factory=dict)

    @property
    def head(self) -> str | None:
        """The last committed snapshot (a prune never removes the head)."""
        return next(reversed(self.commits)) if self.commits else None

    def live(self) -> list[Entry]:
        """Committed snapshots no prune removed, in commit order."""
        return [e for sid, e in self.commits.items() if sid not in self.pruned]

    def still_valid(self, fd: int, st: os.stat_result) -> bool:
        """Whether the file behind ``fd`` (``st``: its ``fstat``) is the log this index
        describes (maybe grown)."""
        return (
            (st.st_dev, st.st_ino) == self.inode
            and st.st_size >= self.end
            and os.pread(fd, _log.HEAD_SIZE, self.last_at) == self.last_frame
        )


def extend(fd: int, index: Index | None, *, source: str, checkpoint_id: str) -> Index | None:
    """``index`` brought up to date with the log behind ``fd`` (``None``: no commit yet).

    Starts over when ``index`` is ``None`` or no longer describes the file.
    """
    st = os.fstat(fd)
    if index is not None and not index.still_valid(fd, st):
        index = None
    if index is None:
        index = _start(fd, st, source=source, checkpoint_id=checkpoint_id)
        if index is None:
            return None
    if index.version == 1:
        return index if index.commits else None
    _walk(fd, index, st.st_size, source)
    return index if index.commits else None


def _start(fd: int, st: os.stat_result, *, source: str, checkpoint_id: str) -> Index | None:
    size = st.st_size
    head = os.pread(fd, _log.HEAD_SIZE, 0)
    if len(head) < _log.HEAD_SIZE:
        _log.scan(head, source=source)  # a torn header passes; a damaged one raises
        return None
    magic, length, check, _ = _HEAD.unpack(head)
    end = _log.HEAD_SIZE + length + _END
    if magic != _log.MAGIC or length ^ 0xFFFFFFFF != check or end > size:
        _log.scan(os.pread(fd, min(size, 4096), 0), source=source)
        return None
    header = _log.decode_header(read_frame(fd, 0, length, source, last=end == size),
                                source=source, checkpoint_id=checkpoint_id)
    index = Index(header.checkpoint_id, header.format, header.version,
                  (st.st_dev, st.st_ino), end=end, last_at=0, last_frame=head,
                  header_pruned=list(header.pruned))
    index.pruned.update(header.pruned)
    if header.version == 1:
        _read_version_1(fd, index, size, source)
    return index


def _read_version_1(fd: int, index: Index, size: int, source: str) -> None:
    payloads, valid = _log.scan(os.pread(fd, size, 0), source=source)
    for payload in payloads[1:]:
        commit = _log.decode_commit(payload, index.format, source=source)
        header = _log.CommitHeader(
            snapshot_id=commit.snapshot_id,
            parent_snapshot_id=commit.parent_snapshot_id,
            timestamp=commit.timestamp,
            metadata=commit.metadata,
            format_version=commit.format_version,
            workflow_name=commit.workflow_name,
            graph_signature_hash=commit.graph_signature_hash,
        )
        index.commits[commit.snapshot_id] = Entry(header, refs=commit.parts)
        index.memory.update((digest, bytes(raw)) for digest, raw in commit.blobs.items())
    index.end = valid
    if len(payloads) > 1:
        last = payloads[-1]
        index.last_at = valid - _log.FRAME_OVERHEAD - len(last)
        index.last_frame = _log.frame_head(last)
    index.torn = size - valid


def _walk(fd: int, index: Index, size: int, source: str) -> None:
    """Index the frames from ``index.end`` on; stop at a torn tail (left for a writer)."""
    pos = index.end
    staged: dict[str, tuple[int, int]] = {}
    refs_at = -1
    while pos < size:
        peek = os.pread(fd, _PEEK, pos)
        if len(peek) < _log.HEAD_SIZE:
            _log.scan(os.pread(fd, size - pos, pos), source=source, offset=pos)
            break
        magic, length, check, _ = _HEAD.unpack_from(peek)
        if magic != _log.MAGIC or length ^ 0xFFFFFFFF != check:
            _log.scan(os.pread(fd, min(size - pos, 1 << 16), pos), source=source, offset=pos)
            break  # zero-filled or a partial header: torn (scan raised otherwise)
        end = pos + _log.HEAD_SIZE + length + _END
        if end > size:
            break  # cut short by a crash
        kind = peek[_log.HEAD_SIZE : _log.HEAD_SIZE + 1]
        if kind == _log.BLOB or kind == _log.PIECES:
            digest = peek[_log.HEAD_SIZE + 1 :].decode("ascii", "replace")
            staged[digest] = (pos, length)
        elif kind == _log.REFS:
            refs_at = pos
        else:
            payload = read_frame(fd, pos, length, source, last=end == size)
            if payload is None:
                break  # the last write's end marker never reached the disk
            record = _log.decode_record(payload, index.format, source=source)
            if kind == _log.COMMIT:
                if refs_at < 0:
                    raise CorruptCheckpointError(
                        f"commit record at byte {pos} follows no part list", source=source)
                index.commits[record.snapshot_id] = Entry(record, refs_at=refs_at)
            else:
                index.pruned.update(record)
            index.blobs.update(staged)
            staged, refs_at = {}, -1
            index.end, index.last_at = end, pos
            index.last_frame = peek[: _log.HEAD_SIZE]
        pos = end
    index.torn = size - index.end


def read_frame(fd: int, pos: int, length: int, source: str, *, last: bool = False) -> Any:
    """The checked payload of the frame at ``pos``; ``None`` if it is a torn last record."""
    data = os.pread(fd, _log.HEAD_SIZE + length + _END, pos)
    payloads, _ = _log.scan(data, source=source, offset=pos)
    if not payloads:
        if last:
            return None
        raise CorruptCheckpointError(f"log record at byte {pos} is damaged", source=source)
    return payloads[0]


def parts_of(fd: int, index: Index, entry: Entry, source: str) -> dict[str, dict[str, bytes]]:
    """The snapshot's state parts, read from the log (each record checksummed)."""
    refs = entry.refs
    if refs is None:
        _, length, _, _ = _HEAD.unpack(os.pread(fd, _log.HEAD_SIZE, entry.refs_at))
        refs = _log.decode_record(read_frame(fd, entry.refs_at, length, source), index.format,
                                  source=source)
    parts: dict[str, dict[str, bytes]] = {}
    for bucket, keys in refs.items():
        parts[bucket] = {key: _blob(fd, index, digest, source, entry) for key, digest in
                         keys.items()}
    return parts


def _blob(fd: int, index: Index, digest: str, source: str, entry: Entry) -> bytes:
    data = index.memory.get(digest)
    if data is not None:
        return data
    where = index.blobs.get(digest)
    if where is None:
        raise CorruptCheckpointError(
            f"snapshot {entry.header.snapshot_id!r} names state part {digest!r}, which the "
            "log does not hold", source=source)
    payload: bytes = read_frame(fd, where[0], where[1], source)
    if payload[:1] == _log.PIECES:
        return b"".join(_blob(fd, index, piece, source, entry)
                        for piece in _log.piece_digests(payload))
    return payload[1 + _log.DIGEST_SIZE :]


def committed_id(path: Any) -> str | None:
    """The checkpoint id in the log at ``path`` if it holds a complete first commit.

    Reads the header and walks frame headers up to the first ``C`` record (version 2), or
    checks the first commit record's frame (version 1): listing stays cheap.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, _log.HEAD_SIZE, 0)
        if len(head) < _log.HEAD_SIZE:
            return None
        magic, length, check, _ = _HEAD.unpack(head)
        pos = _log.HEAD_SIZE + length + _END
        if magic != _log.MAGIC or length ^ 0xFFFFFFFF != check or pos > size:
            return None
        header = _log.decode_header(read_frame(fd, 0, length, str(path)), source=str(path))
        while pos + _log.HEAD_SIZE <= size:
            peek = os.pread(fd, _log.HEAD_SIZE + 1, pos)
            magic, length, check, _ = _HEAD.unpack_from(peek)
            end = pos + _log.HEAD_SIZE + length + _END
            if magic != _log.MAGIC or length ^ 0xFFFFFFFF != check or end > size:
                return None
            if header.version == 1 or peek[_log.HEAD_SIZE:] == _log.COMMIT:
                return header.checkpoint_id
            pos = end
        return None
    finally:
        os.close(fd)
