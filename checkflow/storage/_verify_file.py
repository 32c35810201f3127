"""``verify()`` for one file-stored checkpoint log: read every record, check it, report.

Every frame's checksum, every part's hash, every snapshot's decodability and the snapshot
graph are checked; records after the last commit are a torn tail, parts and snapshots no
snapshot names are leftovers (pruned snapshots awaiting a compaction are not). Reads versions 1
and 2 of the log. This module works on bytes it is given; it never opens or repairs a file.
"""

from __future__ import annotations

from checkflow.checkpoints import Format, SnapshotRecord
from checkflow.errors import CheckflowError
from checkflow.storage import _log
from checkflow.storage._verify import VerifyReport, check_records

__all__ = ["verify_log"]


def header_trees(blobs: dict[str, bytes]) -> list[str]:
    """The hashes stored as a ``T`` record (the staged value is the whole record)."""
    return [d for d, v in blobs.items() if v[:1] == _log.PIECES and
            v[1 : 1 + _log.DIGEST_SIZE].decode("ascii", "replace") == d]


def _join_pieces(
    blobs: dict[str, bytes], problems: list[str], source: str, *, trees: set[str]
) -> dict[str, list[str]]:
    """Replace each ``T`` record in ``blobs`` by the joined bytes; return its piece hashes."""
    pieces_of: dict[str, list[str]] = {}
    for digest in trees:
        pieces = _log.piece_digests(blobs[digest])
        pieces_of[digest] = pieces
        missing = [p for p in pieces if p not in blobs or p in trees]
        if missing:
            problems.append(f"{source}: state part {digest!r} lacks its pieces {missing}")
            del blobs[digest]
            continue
        blobs[digest] = b"".join(blobs[p] for p in pieces)
    return pieces_of


def verify_log(data: bytes, *, source: str, fallback_id: str) -> VerifyReport:
    """The report for the log ``data`` (``fallback_id`` names it if its header is unreadable)."""
    try:
        payloads, _ = _log.scan(data, source=source)
        header = _log.decode_header(payloads[0], source=source) if payloads else None
    except CheckflowError as exc:
        return VerifyReport(fallback_id, corrupt=(str(exc),))
    if header is None:
        return VerifyReport(fallback_id, torn_tail_bytes=len(data))
    fmt: Format = "json" if header.format == "json" else "msgpack"
    problems: list[str] = []
    blobs: dict[str, bytes] = {}
    commits: list[tuple[_log.CommitHeader, dict[str, dict[str, str]]]] = []
    pruned = set(header.pruned)
    pos = _log.FRAME_OVERHEAD + len(payloads[0])
    committed_end = pos
    refs: dict[str, dict[str, str]] | None = None
    staged: dict[str, bytes] = {}
    for payload in payloads[1:]:
        pos += _log.FRAME_OVERHEAD + len(payload)
        try:
            if header.version == 1:
                commit = _log.decode_commit(payload, header.format, source=source)
                names = _log.CommitHeader.__struct_fields__
                fields = {name: getattr(commit, name) for name in names}
                commits.append((_log.CommitHeader(**fields), commit.parts))
                blobs.update((d, bytes(raw)) for d, raw in commit.blobs.items())
                committed_end = pos
                continue
            kind = payload[:1]
            if kind == _log.BLOB or kind == _log.PIECES:
                digest = payload[1 : 1 + _log.DIGEST_SIZE].decode("ascii", "replace")
                staged[digest] = payload if kind == _log.PIECES else (
                    payload[1 + _log.DIGEST_SIZE :])
                continue
            record = _log.decode_record(payload, header.format, source=source)
            if kind == _log.REFS:
                refs = record
                continue
            if kind == _log.COMMIT:
                if refs is None:
                    problems.append(f"{source}: commit {record.snapshot_id!r} has no part list")
                commits.append((record, refs or {}))
            else:
                pruned.update(record)
            blobs.update(staged)
            staged, refs, committed_end = {}, None, pos
        except CheckflowError as exc:
            problems.append(str(exc))
    pieces_of = _join_pieces(blobs, problems, source, trees=set(header_trees(blobs)))
    for digest, part in blobs.items():
        if not _log.addresses(digest, part, pieces_of.get(digest)):
            problems.append(f"{source}: state part {digest!r} does not match its hash")
    records: list[SnapshotRecord] = []
    named: set[str] = set()
    leftovers: list[str] = []
    for commit_header, commit_refs in commits:
        named.update(d for keys in commit_refs.values() for d in keys.values())
        named.update(p for keys in commit_refs.values() for d in keys.values()
                     for p in pieces_of.get(d, ()))
        if commit_header.snapshot_id in pruned:
            continue  # kept until a compaction: by design, not a leftover
        try:
            parts = {b: {k: blobs[d] for k, d in keys.items()} for b, keys in commit_refs.items()}
        except KeyError as exc:
            problems.append(
                f"{source}: snapshot {commit_header.snapshot_id!r} names state part "
                f"{exc.args[0]!r}, which the log does not hold")
            continue
        records.append(SnapshotRecord.from_header(commit_header, format=fmt, parts=parts))
    leftovers += sorted(set(blobs) - named)
    return check_records(
        header.checkpoint_id,
        commits[-1][0].snapshot_id if commits else None,
        records,
        source=source,
        torn_tail_bytes=len(data) - committed_end,
        corrupt=problems,
        unreachable=leftovers,
    )
