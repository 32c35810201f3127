"""Versioned msgspec envelopes for whole checkpoints (``to_bytes`` / ``from_bytes``).

Encoded state parts are embedded as raw JSON or MessagePack (``msgspec.Raw``), so a JSON
checkpoint stays readable and nothing is base64'd or re-encoded when formats agree.
Decoding refuses unknown kinds and versions (``UnsupportedFormatVersionError``) and malformed
bytes (``CorruptCheckpointError``); it never decodes state and never touches a storage.
"""

from __future__ import annotations

from typing import Any

import msgspec

from checkflow.checkpoints._snapshot import Format, SnapshotHeader, SnapshotRecord, transcode
from checkflow.errors import CorruptCheckpointError, UnsupportedFormatVersionError

__all__ = ["CHECKPOINT_KIND", "CHECKPOINT_VERSION", "CheckpointEnvelope", "decode", "encode"]

CHECKPOINT_KIND = "checkflow.checkpoint"
CHECKPOINT_VERSION = 2


class _Header(msgspec.Struct):
    kind: str
    version: int


class _SnapshotEntry(SnapshotHeader, frozen=True):
    parts: dict[str, dict[str, msgspec.Raw]]


class CheckpointEnvelope(msgspec.Struct, frozen=True):
    """A whole checkpoint: identity, persisted head and every snapshot, state parts raw."""

    kind: str
    version: int
    format: Format
    checkpoint_id: str
    workflow_name: str
    graph_signature_hash: str
    head_snapshot_id: str | None
    snapshots: list[_SnapshotEntry]


_json_header = msgspec.json.Decoder(_Header)
_msgpack_header = msgspec.msgpack.Decoder(_Header)
_json_envelope = msgspec.json.Decoder(CheckpointEnvelope)
_msgpack_envelope = msgspec.msgpack.Decoder(CheckpointEnvelope)
_json_encoder = msgspec.json.Encoder()
_msgpack_encoder = msgspec.msgpack.Encoder()


def encode(
    *,
    checkpoint_id: str,
    workflow_name: str,
    graph_signature_hash: str,
    head_snapshot_id: str | None,
    records: list[SnapshotRecord],
    format: Format,
) -> bytes:
    """Serialize a checkpoint's records into one envelope of ``format``."""
    entries = [
        _SnapshotEntry(
            **r.header(),
            parts={
                bucket: {
                    key: msgspec.Raw(transcode(data, r.format, format))
                    for key, data in values.items()
                }
                for bucket, values in r.parts.items()
            },
        )
        for r in records
    ]
    envelope = CheckpointEnvelope(
        kind=CHECKPOINT_KIND,
        version=CHECKPOINT_VERSION,
        format=format,
        checkpoint_id=checkpoint_id,
        workflow_name=workflow_name,
        graph_signature_hash=graph_signature_hash,
        head_snapshot_id=head_snapshot_id,
        snapshots=entries,
    )
    encoder = _json_encoder if format == "json" else _msgpack_encoder
    return encoder.encode(envelope)


def decode(
    data: bytes, *, format: Format, source: str
) -> tuple[CheckpointEnvelope, list[SnapshotRecord]]:
    """Parse and validate an envelope; return it with its snapshot records."""
    if format not in ("json", "msgpack"):
        raise ValueError(f"format must be 'json' or 'msgpack', not {format!r}")
    json = format == "json"
    header = _parse(_json_header if json else _msgpack_header, data, f"not a {format}", source)
    if header.kind != CHECKPOINT_KIND or header.version != CHECKPOINT_VERSION:
        raise UnsupportedFormatVersionError.unreadable(
            source, "checkpoint envelope", format=header.kind, version=header.version,
            reads=(CHECKPOINT_KIND, CHECKPOINT_VERSION))
    envelope = _parse(_json_envelope if json else _msgpack_envelope, data, "malformed", source)
    if envelope.format != format:
        raise CorruptCheckpointError(
            f"envelope says its parts are {envelope.format!r} but it was read as {format!r}",
            source=source,
        )
    records = [
        SnapshotRecord.from_header(
            e,
            format=format,
            parts={b: {k: bytes(raw) for k, raw in v.items()} for b, v in e.parts.items()},
        )
        for e in envelope.snapshots
    ]
    return envelope, records


def _parse(decoder: Any, data: bytes, what: str, source: str) -> Any:
    try:
        return decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptCheckpointError(f"{what} checkpoint envelope: {exc}", source=source) from exc
    except RecursionError as exc:
        raise CorruptCheckpointError(
            f"{what} checkpoint envelope: nested too deeply to parse", source=source
        ) from exc
