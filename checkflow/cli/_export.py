"""``checkpoints export``: a checkpoint as JSON, each stored state part written once.

A snapshot's state is stored as encoded parts (``record.parts[bucket][key]``) and branches share
most of them, so expanding every snapshot's state (``--expand``, the form of
``checkflow.hosting.checkpoint_export``) repeats a shared part once per snapshot. This writer
emits each distinct part once under a content id and lets each snapshot name its parts by id,
so the output grows with what the storage holds, not with snapshots times parts::

    {
      "format": "checkflow.export",
      "version": 2,
      "checkpoint": {checkpoint_summary: checkpoint_id, head_snapshot_id, status, tips, ...},
      "parts": {
        "sha256:<32 hex digits>": <the part's value, inspection-decoded, JSON-native>,
        ...
      },
      "snapshots": [
        {snapshot_summary: snapshot_id, parent_snapshot_id, timestamp, metadata, is_head,
         "state": {"workflow_state": {"<key>": "<part id>", ...}, "executor_states": {...},
                   "edge_states": {...}, "messages": {"input": "<part id>", ...}}},
        ...
      ]
    }

A part id is ``sha256:`` and the first 32 hex digits (128 bits) of the SHA-256 of the part's
stored bytes; in the rare checkpoint holding both encodings, bytes already seen in the other one
(JSON ``1`` is msgpack ``49``) get ``~json`` or ``~msgpack`` appended. ``parts`` precedes
``snapshots`` so a streaming reader can resolve ids as it goes, and each part and snapshot is
one line. A snapshot's state is ``{bucket: {key: parts[id] for key, id in ids.items()} for
bucket, ids in snapshot["state"].items()}``, equal to what ``--expand`` shows. Values are the
codec's inspection decode, so this runs without the workflow's code: a type never registered
here shows as ``{"$opaque": type_id, "value": ...}``. The document is written as it is made: a
failed export (non-zero exit) leaves an incomplete document on stdout.

This module must never hold the whole document, or more than one decoded part or snapshot, in
memory; never decode a part more than once; never write to a storage; and never decode state
for running (only ``decode_for_inspection``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO

import msgspec

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, Format
from checkflow.hosting import checkpoint_summary, jsonable, snapshot_summary
from checkflow.state import decode_for_inspection

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "write_export"]

EXPORT_FORMAT = "checkflow.export"
EXPORT_VERSION = 2
"""Version 1 is the self-contained form ``--expand`` prints (it carries no ``format`` field)."""

_ENCODER = msgspec.json.Encoder()


class _PartIds:
    """The content ids of a checkpoint's distinct parts, with the parts in order of first use."""

    def __init__(self) -> None:
        self._ids: dict[tuple[Format, bytes], str] = {}
        self._formats: dict[str, Format] = {}
        self.distinct: list[tuple[str, bytes, Format]] = []

    def __call__(self, data: bytes, fmt: Format) -> str:
        """The id of ``data`` read as ``fmt``; hashed once per distinct part, since branches
        repeat the same bytes (often the very same object) in every snapshot."""
        found = self._ids.get((fmt, data))
        if found is None:
            found = "sha256:" + hashlib.sha256(data).hexdigest()[:32]
            if self._formats.setdefault(found, fmt) != fmt:
                found += "~" + fmt  # the same bytes are another value in the other encoding
            self._ids[fmt, data] = found
            self.distinct.append((found, data, fmt))
        return found

    def state(self, snapshot: CheckpointSnapshot) -> dict[str, dict[str, str]]:
        """The snapshot's state as part ids, bucket by bucket."""
        record = snapshot.record
        return {bucket: {key: self(data, record.format) for key, data in parts.items()}
                for bucket, parts in record.parts.items()}


def _json(value: Any) -> str:
    return _ENCODER.encode(jsonable(value)).decode()


def _write_entries(out: TextIO, entries: Iterable[str], close: str) -> None:
    """The members of a JSON object or array one per line, then its closing bracket; each
    entry is made only when it is written, so only one is ever held."""
    separator = "\n    "
    for entry in entries:
        out.write(separator)
        out.write(entry)
        separator = ",\n    "
    out.write(close if separator == "\n    " else "\n  " + close)


def write_export(checkpoint: Checkpoint, out: TextIO,
                 progress: Callable[[str, int, int], None] | None = None) -> None:
    """Write ``checkpoint`` to ``out`` as the document above, one part or snapshot at a time.

    Every snapshot's part ids are taken before anything is written, so a snapshot that cannot
    be read fails the export before its first byte, and ``parts`` can precede ``snapshots``.
    ``progress(what, done, total)`` is told of each snapshot read, then of each part and
    snapshot written.
    """
    tell = progress or _silent
    ids = _PartIds()
    snapshots = checkpoint.snapshots
    for done, snapshot in enumerate(snapshots):
        tell("reading snapshots", done, len(snapshots))
        ids.state(snapshot)
    tell("reading snapshots", len(snapshots), len(snapshots))
    total = len(ids.distinct) + len(snapshots)
    written = _Count(tell, "writing parts and snapshots", total)
    out.write(f'{{\n  "format": {_json(EXPORT_FORMAT)},\n  "version": {EXPORT_VERSION},\n'
              f'  "checkpoint": {_json(checkpoint_summary(checkpoint))},\n  "parts": {{')
    _write_entries(out, map(written, _parts(ids)), "}")
    out.write(',\n  "snapshots": [')
    head = checkpoint.head_snapshot_id
    _write_entries(out, (written(_json({**snapshot_summary(s, head), "state": ids.state(s)}))
                         for s in snapshots), "]")
    out.write("\n}\n")


def _silent(what: str, done: int, total: int) -> None:
    pass


class _Count:
    """Passes each entry through, telling ``progress`` how many have been made."""

    def __init__(self, progress: Callable[[str, int, int], None], what: str, total: int
                 ) -> None:
        self._progress, self._what, self._total, self._done = progress, what, total, 0

    def __call__(self, entry: str) -> str:
        self._done += 1
        self._progress(self._what, self._done, self._total)
        return entry


def _parts(ids: _PartIds) -> Iterator[str]:
    for part_id, data, fmt in ids.distinct:
        yield f"{_json(part_id)}: {_json(decode_for_inspection(data, format=fmt))}"
