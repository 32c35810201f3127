"""The on-disk log of one file-stored checkpoint: framing, record shapes and scanning.

A log is a header record (always JSON: the original checkpoint id, the log's encoding and
version) followed by records. Each record is framed as::

    magic "CFL1" | u32 length | u32 ~length | u32 crc32(payload) | payload | "CFE\\n"

so a torn last record (cut short, or with its end marker missing) is recognisable and
ignored, while a damaged record anywhere else - or a complete last record whose checksum
fails - is corruption.

Version 2 (written now) splits a commit into records a reader can skip: ``B`` blobs (one
content-addressed state part: ``B`` + its 32-character hash + the bytes), then one ``R``
record (the snapshot's part hashes), then the ``C`` record (the snapshot's header), which
commits it and makes it the head. ``P`` records list the snapshot ids a prune removed. A
reader indexes the log from the frame headers and the small ``C``/``P`` records alone, and
reads a snapshot's ``R`` and ``B`` records only when its state is wanted. Version 1 (still
read, rewritten as version 2 on the first write) held one record per commit with its new
part bytes inline. This module never opens files or locks.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import msgspec

from checkflow.checkpoints import SnapshotHeader
from checkflow.errors import CorruptCheckpointError, UnsupportedFormatVersionError

__all__ = [
    "BLOB",
    "COMMIT",
    "DIGEST_SIZE",
    "FRAME_OVERHEAD",
    "HEAD_SIZE",
    "LOG_KIND",
    "LOG_VERSION",
    "PIECES",
    "PRUNE",
    "READABLE_VERSIONS",
    "REFS",
    "CommitHeader",
    "CommitRecord",
    "LogHeader",
    "blob_payload",
    "commit_payload",
    "committed_checkpoint_id",
    "decode_commit",
    "decode_header",
    "decode_record",
    "encode_commit",
    "encode_header",
    "frame",
    "frame_head",
    "piece_digests",
    "pieces_payload",
    "prune_payload",
    "refs_payload",
    "scan",
]

LOG_KIND = "checkflow.checkpoint-log"
LOG_VERSION = 2
READABLE_VERSIONS = (1, 2)
BLOB, PIECES, REFS, COMMIT, PRUNE = b"B", b"T", b"R", b"C", b"P"
DIGEST_SIZE = 32  # hex characters of a part's content hash
MAGIC = b"CFL1"
END = b"CFE\n"
_HEAD = struct.Struct("<4sIII")


class LogHeader(msgspec.Struct, frozen=True):
    """First record of every log: what it is and whose it is.

    ``pruned`` lists the snapshot ids ``prune()`` removed (a prune rewrites the log, header
    included), so a head that was pruned is told apart from one that was lost.
    """

    kind: str
    version: int
    checkpoint_id: str
    format: str
    pruned: list[str] = []


class CommitHeader(SnapshotHeader, frozen=True):
    """Version 2: the ``C`` record committing one snapshot (and making it the head)."""

    workflow_name: str = ""
    graph_signature_hash: str = ""


class CommitRecord(SnapshotHeader, frozen=True):
    """Version 1: one committed snapshot (and therefore the new persisted head)."""

    parts: dict[str, dict[str, str]]  # bucket -> key -> content hash
    blobs: dict[str, msgspec.Raw]  # content hash -> encoded part, only those new to the log
    workflow_name: str = ""
    graph_signature_hash: str = ""


_ENCODERS: dict[str, msgspec.json.Encoder | msgspec.msgpack.Encoder] = {
    "json": msgspec.json.Encoder(),
    "msgpack": msgspec.msgpack.Encoder(),
}
_COMMIT_DECODERS: dict[str, Any] = {
    "json": msgspec.json.Decoder(CommitRecord),
    "msgpack": msgspec.msgpack.Decoder(CommitRecord),
}
_HEADER_DECODER = msgspec.json.Decoder(LogHeader)
_COMMIT_HEADER_DECODERS: dict[str, Any] = {
    "json": msgspec.json.Decoder(CommitHeader),
    "msgpack": msgspec.msgpack.Decoder(CommitHeader),
}
_REFS_DECODERS: dict[str, Any] = {
    "json": msgspec.json.Decoder(dict[str, dict[str, str]]),
    "msgpack": msgspec.msgpack.Decoder(dict[str, dict[str, str]]),
}
_PRUNE_DECODERS: dict[str, Any] = {
    "json": msgspec.json.Decoder(list[str]),
    "msgpack": msgspec.msgpack.Decoder(list[str]),
}


def content_digest(data: bytes) -> str:
    """The address of a part stored whole, or of one piece: SHA-256 of the bytes, cut to 128
    bits (hardware-accelerated on current CPUs: twice BLAKE2b's speed in hashlib here). An
    address of content, never a defence against a chosen clash."""
    return hashlib.sha256(data).hexdigest()[:DIGEST_SIZE]


def pieces_digest(piece_digests: list[str]) -> str:
    """The address of a part stored as pieces: the hash of its pieces' addresses (the cut
    depends only on the bytes, so equal parts still get equal addresses)."""
    return content_digest(b"T" + "".join(piece_digests).encode("ascii"))


def addresses(digest: str, data: bytes, piece_digests: list[str] | None) -> bool:
    """Whether ``digest`` is the address of ``data`` (stored as ``piece_digests``, if cut):
    by the rule above, or by the BLAKE2b of the whole bytes that logs before it used."""
    expected = content_digest(data) if piece_digests is None else pieces_digest(piece_digests)
    return digest == expected or hashlib.blake2b(data, digest_size=16).hexdigest() == digest


def blob_payload(digest: str, data: bytes) -> bytes:
    """A ``B`` record: one state part, addressed by ``digest``."""
    return b"".join((BLOB, digest.encode("ascii"), data))


def pieces_payload(digest: str, pieces: list[str]) -> bytes:
    """A ``T`` record: a part stored as pieces (by hash) whose concatenation is its bytes."""
    return b"".join((PIECES, digest.encode("ascii"), "".join(pieces).encode("ascii")))


def piece_digests(payload: bytes) -> list[str]:
    """The piece hashes a ``T`` record lists, in order."""
    body = payload[1 + DIGEST_SIZE :].decode("ascii", "replace")
    return [body[i : i + DIGEST_SIZE] for i in range(0, len(body), DIGEST_SIZE)]


def refs_payload(refs: dict[str, dict[str, str]], format: str) -> bytes:
    """An ``R`` record: bucket -> key -> the hash of the part's bytes."""
    return REFS + _ENCODERS[format].encode(refs)


def commit_payload(header: CommitHeader, format: str) -> bytes:
    """A ``C`` record: the snapshot's header; appending it commits the snapshot."""
    return COMMIT + _ENCODERS[format].encode(header)


def prune_payload(snapshot_ids: list[str], format: str) -> bytes:
    """A ``P`` record: the snapshot ids one prune removed."""
    return PRUNE + _ENCODERS[format].encode(snapshot_ids)


def decode_record(payload: bytes, format: str, *, source: str) -> Any:
    """The body of an ``R`` (refs), ``C`` (``CommitHeader``) or ``P`` (ids) record."""
    decoders = {REFS: _REFS_DECODERS, COMMIT: _COMMIT_HEADER_DECODERS, PRUNE: _PRUNE_DECODERS}
    kind = payload[:1]
    table = decoders.get(kind)
    if table is None:
        raise CorruptCheckpointError(f"log record of unknown kind {kind!r}", source=source)
    try:
        return table[format].decode(payload[1:])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptCheckpointError(f"malformed {kind.decode()} record: {exc}",
                                     source=source) from exc
    except RecursionError as exc:
        raise CorruptCheckpointError("log record nested too deeply", source=source) from exc


def encode_header(
    checkpoint_id: str, format: str, pruned: list[str] | None = None, *, version: int = LOG_VERSION
) -> bytes:
    """The header payload of a log (always JSON, so any reader can tell the encoding)."""
    header = LogHeader(LOG_KIND, version, checkpoint_id, format, pruned or [])
    return _ENCODERS["json"].encode(header)


def encode_commit(record: CommitRecord, format: str) -> bytes:
    """A commit record's payload, in the log's encoding (``format`` from its header)."""
    return _ENCODERS[format].encode(record)


HEAD_SIZE = _HEAD.size
FRAME_OVERHEAD = _HEAD.size + len(END)


def frame_head(payload: bytes) -> bytes:
    """The fixed-size frame header of ``payload``: also a fingerprint of the record."""
    length = len(payload)
    return _HEAD.pack(MAGIC, length, length ^ 0xFFFFFFFF, zlib.crc32(payload))


def frame(payload: bytes) -> bytes:
    """``payload`` framed for appending: header (length, its complement, CRC), payload, end mark."""
    return b"".join((frame_head(payload), payload, END))


def scan(data: bytes | memoryview, *, source: str, offset: int = 0) -> tuple[list[bytes], int]:
    """Return the complete payloads in ``data`` and where the valid log ends.

    The valid end is before a torn last record; a damaged record that is not such a tail
    raises ``CorruptCheckpointError`` naming ``source`` and the byte offset (+ ``offset``).
    """
    view = memoryview(data)
    payloads: list[bytes] = []
    pos, size = 0, len(view)
    while pos < size:
        if size - pos < _HEAD.size:
            _torn_or_corrupt(view[pos:], source, offset + pos, tail_possible=True)
            break
        magic, length, check, crc = _HEAD.unpack_from(view, pos)
        if magic != MAGIC or length ^ 0xFFFFFFFF != check:
            _torn_or_corrupt(view[pos:], source, offset + pos, tail_possible=False)
            break
        end = pos + _HEAD.size + length + len(END)
        if end > size:
            break  # cut short by a crash: the last write never completed
        payload = bytes(view[pos + _HEAD.size : end - len(END)])
        intact_end = view[end - len(END) : end] == END
        if zlib.crc32(payload) != crc or not intact_end:
            if end == size and not intact_end:
                break  # the last write's pages did not all reach the disk
            raise CorruptCheckpointError(
                f"log record at byte {offset + pos} fails its checksum", source=source
            )
        payloads.append(payload)
        pos = end
    return payloads, pos


def _torn_or_corrupt(rest: memoryview, source: str, at: int, *, tail_possible: bool) -> None:
    # Past the last good record: a crash can leave a short header or zero-filled blocks.
    if tail_possible and MAGIC.startswith(bytes(rest[: len(MAGIC)])):
        return
    if not any(rest):
        return
    raise CorruptCheckpointError(f"log record at byte {at} has a damaged header", source=source)


def decode_header(payload: bytes, *, source: str, checkpoint_id: str | None = None) -> LogHeader:
    """The log's header; refuses unknown kinds, versions, encodings and another checkpoint's log."""
    try:
        header = _HEADER_DECODER.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptCheckpointError(f"malformed log header: {exc}", source=source) from exc
    if header.kind != LOG_KIND or header.version not in READABLE_VERSIONS:
        raise UnsupportedFormatVersionError.unreadable(
            source, "log", format=header.kind, version=header.version,
            reads=(LOG_KIND, LOG_VERSION))
    if header.format not in _ENCODERS:
        raise UnsupportedFormatVersionError(
            f"{source}: log encoding {header.format!r} is unknown", format=header.format
        )
    if checkpoint_id is not None and header.checkpoint_id != checkpoint_id:
        raise CorruptCheckpointError(
            f"log belongs to checkpoint {header.checkpoint_id!r}, not {checkpoint_id!r}",
            source=source,
        )
    return header


def committed_checkpoint_id(path: Path) -> str | None:
    """The id in the log at ``path`` if it holds a complete first commit; None otherwise.

    Reads only the header and the first commit's frame header, so listing stays cheap.
    """
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = handle.read(_HEAD.size)
            header_end = _frame_end(start, 0)
            if header_end is None or header_end > size:
                return None
            start += handle.read(header_end + _HEAD.size - len(start))
    except (FileNotFoundError, NotADirectoryError):
        return None
    payloads, end = scan(start[:header_end], source=str(path))
    if not payloads:
        return None
    first_commit_end = _frame_end(start, end)
    if first_commit_end is None or first_commit_end > size:
        return None
    return decode_header(payloads[0], source=str(path)).checkpoint_id


def _frame_end(data: bytes, at: int) -> int | None:
    if len(data) < at + _HEAD.size:
        return None
    magic, length, check, _ = _HEAD.unpack_from(data, at)
    if magic != MAGIC or length ^ 0xFFFFFFFF != check:
        return None
    end: int = at + _HEAD.size + length + len(END)
    return end


def decode_commit(payload: bytes, format: str, *, source: str) -> CommitRecord:
    """A commit record from its payload; ``CorruptCheckpointError`` naming ``source`` if bad."""
    try:
        record: CommitRecord = _COMMIT_DECODERS[format].decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptCheckpointError(f"malformed commit record: {exc}", source=source) from exc
    except RecursionError as exc:
        raise CorruptCheckpointError("commit record nested too deeply", source=source) from exc
    return record
