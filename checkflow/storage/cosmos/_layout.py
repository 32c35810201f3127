"""How checkpoints look as Cosmos DB items: partition keys, item ids, items, sizes, chunks.

One logical partition per checkpoint; its key is the checkpoint id (hashed when too long).
Items in it:

- ``manifest`` (fixed id): the head, the commit sequence number and the *epoch*, a random id
  the first commit picks. Snapshots and chunks carry the epoch, so leftovers of a deleted
  checkpoint never resurface in a new checkpoint with the same id.
- ``s.<snapshot id>``: one snapshot (lineage, timestamp, metadata, encoded parts), or the list
  of chunk items that hold its parts when they are too big for one item.
- ``c.<random>``: one slice of a big snapshot's parts, unreachable until a snapshot names it.
- ``p.<random>``: the ids one ``prune()`` removed (written before it deletes anything), so a
  pruned head is told apart from a lost one.

Parts are text: JSON as it is (readable in the portal), MessagePack as base64. Pure functions
only: this module must never perform I/O or import the SDK.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import uuid
from typing import Any, Final, NamedTuple, TypeVar

import msgspec

from checkflow.checkpoints import Format, SnapshotRecord
from checkflow.errors import CorruptCheckpointError, UnsupportedFormatVersionError

__all__ = [
    "BATCH_BUDGET_BYTES",
    "ITEM_BUDGET_BYTES",
    "MANIFEST_ID",
    "MAX_BATCH_OPERATIONS",
    "Manifest",
    "chunk_items",
    "convert_item",
    "decode_text",
    "encode_text",
    "item_source",
    "json_native",
    "manifest_item",
    "parse_manifest",
    "partition_key",
    "prune_items",
    "pruned_ids",
    "record_from_item",
    "serialized_size",
    "snapshot_item",
    "snapshot_item_id",
]

MANIFEST_ID: Final = "manifest"
MANIFEST_SCHEMA: Final = "checkflow.checkpoint.manifest"
SNAPSHOT_SCHEMA: Final = "checkflow.checkpoint.snapshot"
CHUNK_SCHEMA: Final = "checkflow.checkpoint.chunk"
PRUNE_SCHEMA: Final = "checkflow.checkpoint.prune"
LAYOUT_VERSION: Final = 1

ITEM_BUDGET_BYTES: Final = 1_500_000
"""Largest serialized item we write (Cosmos allows 2 MB; escaping and headers need room)."""
BATCH_BUDGET_BYTES: Final = 1_500_000
"""Largest serialized transactional batch we send (the service limit is 2 MB)."""
MAX_BATCH_OPERATIONS: Final = 100
"""The service's limit on operations in one transactional batch."""

T = TypeVar("T")

_MAX_KEY_BYTES: Final = 1024  # Cosmos allows 2 KB partition key values; stay well inside
_HASHED: Final = "sha256:"
_PLAIN_ID: Final = re.compile(r"[A-Za-z0-9._:-]{1,200}")
_CHUNK_HEADROOM: Final = 1024  # room for the chunk item's own fields
_ASCII: Final = bytes(range(128))
_ENCODER: Final = msgspec.json.Encoder()


class Manifest(NamedTuple):
    """The persisted manifest, as a commit needs it (``etag`` versions it)."""

    checkpoint_id: str
    workflow_name: str
    graph_signature_hash: str
    head: str | None
    epoch: str
    seq: int
    etag: str = ""


def partition_key(identifier: str) -> str:
    """The partition key value for a checkpoint or session id: the id, or a hash if too long.

    Ids that already look like a hashed key are hashed too, so two ids never share a key.
    """
    raw = identifier.encode("utf-8", "surrogatepass")
    if len(raw) <= _MAX_KEY_BYTES and not identifier.startswith(_HASHED):
        return identifier
    return _HASHED + hashlib.sha256(raw).hexdigest()


def snapshot_item_id(snapshot_id: str) -> str:
    """The snapshot's item id: ``s.<id>``, or ``s~<hash>`` for ids Cosmos cannot carry."""
    if _PLAIN_ID.fullmatch(snapshot_id):
        return f"s.{snapshot_id}"
    return "s~" + hashlib.sha256(snapshot_id.encode("utf-8", "surrogatepass")).hexdigest()


def item_source(container_id: str, partition: str, item_id: str) -> str:
    """Where an item lives, for error messages."""
    return f"cosmos://{container_id}/{partition}/{item_id}"


def serialized_size(body: Any) -> int:
    """Bytes ``body`` can take on the wire: an upper bound for the SDK's JSON, escaped or not.

    msgspec's UTF-8 length plus two bytes per non-ASCII byte covers ``\\uXXXX`` escaping
    (a 2-byte character grows to 6, a 4-byte one to 12), at msgspec speed.
    """
    data = _ENCODER.encode(body)
    return len(data) + 2 * len(data.translate(None, _ASCII))


def json_native(value: Any) -> Any:
    """``value`` (msgspec-native, e.g. codec ``to_builtins`` output) as plain JSON types."""
    return msgspec.json.decode(_ENCODER.encode(value))


def encode_text(data: bytes, fmt: Format) -> str:
    """Codec bytes as item text: JSON stays readable, MessagePack becomes base64."""
    return data.decode("utf-8") if fmt == "json" else base64.b64encode(data).decode("ascii")


def decode_text(text: str, fmt: Format) -> bytes:
    """The inverse of ``encode_text``."""
    if fmt == "json":
        return text.encode("utf-8")
    return base64.b64decode(text.encode("ascii"), validate=True)


# -- manifest ----------------------------------------------------------------------------------


def manifest_item(pk: str, manifest: Manifest) -> dict[str, Any]:
    """The manifest item body for ``manifest`` (its ``etag`` is the server's, not written)."""
    return {
        "id": MANIFEST_ID,
        "pk": pk,
        "kind": "manifest",
        "schema": MANIFEST_SCHEMA,
        "version": LAYOUT_VERSION,
        "checkpoint_id": manifest.checkpoint_id,
        "workflow_name": manifest.workflow_name,
        "graph_signature_hash": manifest.graph_signature_hash,
        "head_snapshot_id": manifest.head,
        "epoch": manifest.epoch,
        "seq": manifest.seq,
    }


class _ManifestItem(msgspec.Struct):
    schema: str
    version: int
    checkpoint_id: str
    workflow_name: str
    graph_signature_hash: str
    head_snapshot_id: str
    epoch: str
    seq: int
    etag: str = msgspec.field(name="_etag")


def convert_item(item: Any, shape: type[T], *, what: str, error: Any, source: str) -> T:
    """Validate a raw item against ``shape``; a mismatch raises ``error`` naming ``source``."""
    try:
        return msgspec.convert(item, shape)
    except msgspec.ValidationError as exc:
        raise error(f"not a {what} item ({exc})", source=source) from exc


def parse_manifest(item: Any, *, source: str) -> Manifest:
    """Validate a manifest item; unknown schema versions and malformed items fail clearly."""
    if (
        isinstance(item, dict)
        and item.get("schema") == MANIFEST_SCHEMA
        and item.get("version") != LAYOUT_VERSION
    ):
        raise UnsupportedFormatVersionError.unreadable(
            source, "manifest", format=MANIFEST_SCHEMA, version=item.get("version"),
            reads=(MANIFEST_SCHEMA, LAYOUT_VERSION))
    parsed = convert_item(
        item, _ManifestItem, what="manifest", error=CorruptCheckpointError, source=source
    )
    if parsed.schema != MANIFEST_SCHEMA:
        raise CorruptCheckpointError(f"not a checkpoint manifest: {parsed.schema!r}", source=source)
    return Manifest(
        parsed.checkpoint_id,
        parsed.workflow_name,
        parsed.graph_signature_hash,
        parsed.head_snapshot_id,
        parsed.epoch,
        parsed.seq,
        parsed.etag,
    )


# -- snapshots and chunks ----------------------------------------------------------------------


def encode_parts(record: SnapshotRecord) -> dict[str, dict[str, str]]:
    """The record's parts as item text, bucket -> key -> text."""
    fmt = record.format
    return {
        bucket: {key: encode_text(data, fmt) for key, data in parts.items()}
        for bucket, parts in record.parts.items()
    }


def snapshot_item(
    pk: str,
    record: SnapshotRecord,
    *,
    epoch: str,
    seq: int,
    parts: dict[str, dict[str, str]] | None,
    chunks: list[str] | None = None,
) -> dict[str, Any]:
    """A snapshot item holding its parts inline, or naming the chunk items that hold them."""
    return {
        "id": snapshot_item_id(record.snapshot_id),
        "pk": pk,
        "kind": "snapshot",
        "schema": SNAPSHOT_SCHEMA,
        "version": LAYOUT_VERSION,
        "epoch": epoch,
        "seq": seq,
        "snapshot_id": record.snapshot_id,
        "parent_snapshot_id": record.parent_snapshot_id,
        "timestamp": record.timestamp,
        "metadata": json_native(record.metadata),  # bytes become base64, as in JSON files
        "format": record.format,
        "format_version": record.format_version,
        "parts": parts,
        "chunks": chunks or [],
    }


def chunk_items(
    pk: str, parts: dict[str, dict[str, str]], *, snapshot_id: str, epoch: str
) -> list[dict[str, Any]]:
    """Slice the parts (as one JSON text) into chunk items that each fit the item budget."""
    text = msgspec.json.encode(parts).decode("utf-8")
    budget = ITEM_BUDGET_BYTES - _CHUNK_HEADROOM - serialized_size(snapshot_id) - len(epoch)
    return [
        {
            "id": f"c.{uuid.uuid4().hex}",
            "pk": pk,
            "kind": "chunk",
            "schema": CHUNK_SCHEMA,
            "version": LAYOUT_VERSION,
            "epoch": epoch,
            "snapshot_id": snapshot_id,
            "index": index,
            "data": piece,
        }
        for index, piece in enumerate(_split_by_serialized_size(text, budget))
    ]


def prune_items(pk: str, removed: list[str], *, epoch: str) -> list[dict[str, Any]]:
    """Items recording the snapshot ids one prune removed, each within the item budget."""
    budget = ITEM_BUDGET_BYTES - _CHUNK_HEADROOM - len(epoch)
    batches: list[list[str]] = [[]]
    size = 0
    for snapshot_id in removed:
        cost = serialized_size(snapshot_id) + 1
        if batches[-1] and size + cost > budget:
            batches.append([])
            size = 0
        batches[-1].append(snapshot_id)
        size += cost
    return [
        {
            "id": f"p.{uuid.uuid4().hex}",
            "pk": pk,
            "kind": "prune",
            "schema": PRUNE_SCHEMA,
            "version": LAYOUT_VERSION,
            "epoch": epoch,
            "snapshot_ids": batch,
        }
        for batch in batches
        if batch
    ]


def pruned_ids(rows: list[dict[str, Any]]) -> frozenset[str]:
    """Every snapshot id the partition's prune items (of the current epoch) record."""
    return frozenset(
        snapshot_id
        for row in rows
        if row.get("kind") == "prune"
        for snapshot_id in row.get("snapshot_ids") or ()
        if isinstance(snapshot_id, str)
    )


def _split_by_serialized_size(text: str, budget: int) -> list[str]:
    """Cut ``text`` into pieces whose JSON-string encodings each take at most ``budget`` bytes."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        length = min(budget, len(text) - start)
        while True:
            size = serialized_size(text[start : start + length])
            if size <= budget:
                break
            length = max(1, length * budget // size - 8)
        pieces.append(text[start : start + length])
        start += length
    return pieces


class _SnapshotItem(msgspec.Struct):
    schema: str
    version: int
    snapshot_id: str
    parent_snapshot_id: str | None
    timestamp: str
    metadata: dict[str, Any]
    format: str
    format_version: int
    parts: dict[str, dict[str, str]] | None
    chunks: list[str]
    seq: int


def record_from_item(
    item: Any, chunks: dict[str, str], *, source: str
) -> tuple[int, SnapshotRecord]:
    """``(seq, SnapshotRecord)`` from a snapshot item and the chunk texts it may name.

    The record's version and buckets are checked by ``CheckpointSnapshot.from_record``.
    """
    parsed = convert_item(
        item, _SnapshotItem, what="snapshot", error=CorruptCheckpointError, source=source
    )
    if parsed.schema != SNAPSHOT_SCHEMA or parsed.version != LAYOUT_VERSION:
        raise UnsupportedFormatVersionError.unreadable(
            source, "snapshot item", format=parsed.schema, version=parsed.version,
            reads=(SNAPSHOT_SCHEMA, LAYOUT_VERSION))
    if parsed.format not in ("json", "msgpack"):
        raise UnsupportedFormatVersionError(
            f"{source}: snapshot {parsed.snapshot_id!r} has unknown encoding {parsed.format!r}",
            format=parsed.format,
        )
    fmt: Format = "json" if parsed.format == "json" else "msgpack"
    text_parts = parsed.parts if not parsed.chunks else _join_chunks(parsed.chunks, chunks, source)
    if text_parts is None:
        raise CorruptCheckpointError("snapshot item holds no state parts", source=source)
    try:
        parts = {
            bucket: {key: decode_text(text, fmt) for key, text in texts.items()}
            for bucket, texts in text_parts.items()
        }
    except (ValueError, binascii.Error) as exc:
        raise CorruptCheckpointError(f"undecodable state part ({exc})", source=source) from exc
    record = SnapshotRecord(
        snapshot_id=parsed.snapshot_id,
        parent_snapshot_id=parsed.parent_snapshot_id,
        timestamp=parsed.timestamp,
        metadata=parsed.metadata,
        format=fmt,
        parts=parts,
        format_version=parsed.format_version,
    )
    return parsed.seq, record


def _join_chunks(
    names: list[str], chunks: dict[str, str], source: str
) -> dict[str, dict[str, str]]:
    missing = [name for name in names if name not in chunks]
    if missing:
        raise CorruptCheckpointError(f"chunk items {missing} are missing", source=source)
    try:
        return msgspec.json.decode(
            "".join(chunks[name] for name in names), type=dict[str, dict[str, str]]
        )
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptCheckpointError(f"chunks do not join up ({exc})", source=source) from exc
