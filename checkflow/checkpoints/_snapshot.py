"""Immutable snapshots: the persisted ``SnapshotRecord`` and the public ``CheckpointSnapshot``.

The encoded parts ARE the copy of the caller's state: a snapshot encodes once when it is
created and decodes on every read, so nothing the caller mutates afterwards (the dict it passed
in, or one it read back) can reach what is stored. This module never deep-copies state and
never talks to a storage.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec

from checkflow import state as codec
from checkflow.checkpoints._ids import new_snapshot_id
from checkflow.errors import (
    CorruptCheckpointError,
    StateEncodingError,
    StateNestingError,
    UnsupportedFormatVersionError,
)

__all__ = [
    "FORMAT_VERSION",
    "STATE_BUCKETS",
    "CheckpointSnapshot",
    "EncodedPart",
    "Format",
    "SnapshotHeader",
    "SnapshotRecord",
    "check_state_shape",
    "transcode",
]

Format = Literal["json", "msgpack"]

FORMAT_VERSION = 3
"""The snapshot record version this release writes (it reads ``READABLE_FORMAT_VERSIONS``).

Version 3 lets a state part be in the codec's typed layout; version 2 parts are all in the
tagged layout, which this release still reads (and keeps as it is when a part is unchanged).
"""

READABLE_FORMAT_VERSIONS = (2, 3)

STATE_BUCKETS = ("workflow_state", "executor_states", "edge_states", "messages")
MESSAGE_KEYS = ("input", "pending", "output")
_FORMATS = ("json", "msgpack")
_BUCKET_SET = frozenset(STATE_BUCKETS)
_MESSAGE_SET = frozenset(MESSAGE_KEYS)


class SnapshotHeader(msgspec.Struct, frozen=True):
    """The fields every persisted shape of a snapshot carries besides its state parts.

    Envelopes and storage records subclass it, and convert with ``SnapshotRecord.header()``
    and ``SnapshotRecord.from_header()`` instead of copying field by field.
    """

    snapshot_id: str
    parent_snapshot_id: str | None
    timestamp: str
    metadata: dict[str, Any]
    format_version: int


_HEADER_FIELDS = SnapshotHeader.__struct_fields__


class SnapshotRecord(msgspec.Struct, frozen=True):
    """What every storage persists and loads for one snapshot; storages never decode state.

    ``parts[bucket][key]`` is ``checkflow.state.encode(state[bucket][key], format=format)``
    (``parts["messages"]`` has exactly ``input``, ``pending`` and ``output``), so a storage can
    share unchanged parts between snapshots by content. ``metadata`` is in the codec's
    ``to_builtins`` form.
    """

    snapshot_id: str
    parent_snapshot_id: str | None
    timestamp: str
    metadata: dict[str, Any]
    format: Format
    parts: dict[str, dict[str, bytes]]
    format_version: int = FORMAT_VERSION

    def header(self) -> dict[str, Any]:
        """The ``SnapshotHeader`` fields, as keyword arguments for a storage's own record."""
        return {name: getattr(self, name) for name in _HEADER_FIELDS}

    @classmethod
    def from_header(
        cls, header: SnapshotHeader, *, format: Format, parts: dict[str, dict[str, bytes]]
    ) -> SnapshotRecord:
        """The record for a persisted shape's header plus its (re-joined) state parts."""
        fields = {name: getattr(header, name) for name in _HEADER_FIELDS}
        return cls(**fields, format=format, parts=parts)


def check_state_shape(state: Mapping[str, Any]) -> None:
    """Refuse a state that is not exactly the four buckets (and ``messages`` its three keys)."""
    if (type(state) is dict and state.keys() == _BUCKET_SET
            and type(state["workflow_state"]) is dict and type(state["executor_states"]) is dict
            and type(state["edge_states"]) is dict and type(messages := state["messages"]) is dict
            and messages.keys() == _MESSAGE_SET):
        return  # the shape every commit of the engine has: plain dicts, checked at C speed
    if not isinstance(state, Mapping):
        raise TypeError(f"snapshot state must be a dict, not {type(state).__name__}")
    if set(state) != set(STATE_BUCKETS):
        raise ValueError(
            f"snapshot state must have exactly the keys {list(STATE_BUCKETS)}, "
            f"got {sorted(map(str, state))}"
        )
    for bucket in STATE_BUCKETS:
        if not isinstance(state[bucket], Mapping):
            raise TypeError(
                f"snapshot state[{bucket!r}] must be a dict, not {type(state[bucket]).__name__}"
            )
    if set(state["messages"]) != set(MESSAGE_KEYS):
        raise ValueError(
            f"snapshot state['messages'] must have exactly the keys {list(MESSAGE_KEYS)}, "
            f"got {sorted(map(str, state['messages']))}"
        )


class EncodedPart:
    """A state part already encoded by ``checkflow.state.encode``, committed as it is.

    For a caller that knows a part did not change since a snapshot it holds (the engine reuses
    the head record's bytes for untouched parts), so a commit encodes only what changed. The
    bytes are trusted: pass only what the codec produced.
    """

    __slots__ = ("data", "format")

    def __init__(self, data: bytes, format: Format) -> None:
        self.data = data
        self.format = format

    def reencoded(self, fmt: Format) -> bytes:
        return transcode(self.data, self.format, fmt)


def transcode(data: bytes, source: Format, target: Format) -> bytes:
    """Codec bytes of ``source`` format as ``target`` format (the same bytes if they agree)."""
    if source == target:
        return data
    return codec.encode(codec.decode(data, format=source), format=target)


def _encode_parts(state: Mapping[str, Any], fmt: Format) -> dict[str, dict[str, bytes]]:
    parts: dict[str, dict[str, bytes]] = {}
    encode = codec.encode
    for bucket in STATE_BUCKETS:
        encoded: dict[str, bytes] = {}
        for key, value in state[bucket].items():
            if type(key) is not str and not isinstance(key, str):
                raise TypeError(f"snapshot state[{bucket!r}] keys must be str, got {key!r}")
            if type(value) is not EncodedPart:
                encoded[key] = encode(value, format=fmt, path=f"{bucket}.{key}")
            elif value.format == fmt:
                encoded[key] = value.data
            else:
                encoded[key] = value.reencoded(fmt)
        parts[bucket] = encoded
    return parts


def _metadata_tree(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Metadata in ``to_builtins`` form, refused (``StateNestingError``) past the depth limit."""
    if type(metadata) is dict and "$type" not in metadata and all(
            type(k) is str and (type(v) in _PLAIN or _plain_int(v)) for k, v in metadata.items()):
        return dict(metadata)  # flat and plain (the engine's): its own to_builtins form
    # (the tagged layout escapes a mapping with a "$type" key, and tags ints past 64 bits)
    tree: dict[str, Any] = codec.to_builtins(dict(metadata or {}), path="metadata")
    limit = codec.max_nesting_depth()
    if codec.nesting_depth_exceeds(tree, limit):
        raise StateNestingError(
            f"snapshot metadata nested deeper than {limit} levels", path="metadata", limit=limit
        )
    return tree


def _now_iso() -> str:
    """Now in UTC as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``; the seconds are formatted once a second."""
    global _second_stamp
    second, micros = divmod(time.time_ns() // 1000, 1_000_000)
    cached = _second_stamp
    if cached[0] != second:
        cached = _second_stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%S",
                                                        time.gmtime(second)))
    return f"{cached[1]}.{micros:06d}Z"


_second_stamp: tuple[int, str] = (-1, "")
_PLAIN = frozenset({str, bool, type(None)})


def _plain_int(value: object) -> bool:
    return type(value) is int and -(1 << 63) <= value < 1 << 63


def check_record(record: SnapshotRecord, *, source: str = "") -> None:
    """Refuse a record of an unknown version or encoding, or with the wrong buckets."""
    _check_header(record, source=source)
    if set(record.parts) != set(STATE_BUCKETS) or set(record.parts["messages"]) != set(
        MESSAGE_KEYS
    ):
        raise CorruptCheckpointError(
            f"snapshot {record.snapshot_id!r} does not hold the four state buckets",
            source=source,
        )


def _check_header(
    record: SnapshotRecord | SnapshotHeader, *, source: str, format: str | None = None
) -> None:
    if record.format_version not in READABLE_FORMAT_VERSIONS:
        readable = " and ".join(map(str, READABLE_FORMAT_VERSIONS))
        raise UnsupportedFormatVersionError(
            f"{source + ': ' if source else ''}snapshot {record.snapshot_id!r} has format "
            f"version {record.format_version}; this release reads versions {readable}",
            version=record.format_version,
        )
    fmt = format if format is not None else getattr(record, "format", None)
    if fmt not in _FORMATS:
        raise UnsupportedFormatVersionError(
            f"{source + ': ' if source else ''}snapshot {record.snapshot_id!r} has unknown "
            f"encoding {fmt!r}",
            format=fmt,
        )
    limit = codec.max_nesting_depth()
    if codec.nesting_depth_exceeds(record.metadata, limit):
        raise CorruptCheckpointError(
            f"snapshot {record.snapshot_id!r} has metadata nested deeper than {limit} levels",
            source=source,
        )


class CheckpointSnapshot:
    """The complete, immutable state of one workflow execution at one resumable boundary.

    ``state`` decodes the stored encoding into a fresh dict on EVERY access (the encoding is
    the copy): mutate what you read freely, and read it once into a local when you need it
    repeatedly. Build snapshots with ``Checkpoint.commit_snapshot()``; storages rebuild them
    with ``CheckpointSnapshot.from_record()``.
    """

    __slots__ = ("_fetch", "_format", "_header", "_parent", "_record", "_sid", "_source")

    def __init__(
        self,
        *,
        state: Mapping[str, Any],
        parent_snapshot_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        format: Format = "json",
        snapshot_id: str | None = None,
        timestamp: str | None = None,
    ) -> None:
        check_state_shape(state)
        if format not in _FORMATS:
            raise ValueError(f"format must be 'json' or 'msgpack', not {format!r}")
        self._source = ""
        self._header: SnapshotHeader | None = None
        self._fetch: Callable[[], dict[str, dict[str, bytes]]] | None = None
        self._format: Format = format
        self._record: SnapshotRecord | None
        self._record = record = SnapshotRecord(
            snapshot_id=snapshot_id if snapshot_id is not None else new_snapshot_id(),
            parent_snapshot_id=parent_snapshot_id,
            timestamp=timestamp if timestamp is not None else _now_iso(),
            metadata=_metadata_tree(metadata),
            format=format,
            parts=_encode_parts(state, format),
        )
        self._sid, self._parent = record.snapshot_id, record.parent_snapshot_id

    @classmethod
    def from_record(cls, record: SnapshotRecord, *, source: str = "") -> CheckpointSnapshot:
        """Wrap a persisted record without decoding its state (decoding happens on access).

        ``source`` names where the record came from (a file, an item) for error messages.
        """
        check_record(record, source=source)
        snapshot = cls.__new__(cls)
        snapshot._record = record
        snapshot._source = source
        snapshot._header = None
        snapshot._fetch = None
        snapshot._format = record.format
        snapshot._sid, snapshot._parent = record.snapshot_id, record.parent_snapshot_id
        return snapshot

    @classmethod
    def deferred(
        cls,
        header: SnapshotHeader,
        *,
        format: Format,
        fetch: Callable[[], dict[str, dict[str, bytes]]],
        source: str = "",
    ) -> CheckpointSnapshot:
        """A persisted snapshot whose parts are read by ``fetch()`` only when first needed.

        For storages that index their records: lineage, timestamp and metadata come from
        ``header`` at once; ``state``, ``record`` and ``verify()`` call ``fetch`` (once; the
        record is then kept). The header is checked now, the parts when fetched.
        """
        _check_header(header, source=source, format=format)
        snapshot = cls.__new__(cls)
        snapshot._record = None
        snapshot._header = header
        snapshot._fetch = fetch
        snapshot._format = format
        snapshot._source = source
        snapshot._sid, snapshot._parent = header.snapshot_id, header.parent_snapshot_id
        return snapshot

    @property
    def record(self) -> SnapshotRecord:
        """The persisted form (immutable; never mutate its dicts)."""
        record = self._record
        if record is None:
            assert self._header is not None and self._fetch is not None
            record = SnapshotRecord.from_header(self._header, format=self._format,
                                                parts=self._fetch())
            check_record(record, source=self._source)
            self._record = record
        return record

    @property
    def _head(self) -> SnapshotHeader | SnapshotRecord:
        return self._header if self._record is None and self._header is not None else self.record

    @property
    def snapshot_id(self) -> str:
        """This snapshot's id, unique within its checkpoint."""
        return self._sid

    @property
    def parent_snapshot_id(self) -> str | None:
        """The snapshot this one continues from; ``None`` for a lineage's first snapshot."""
        return self._parent

    @property
    def timestamp(self) -> str:
        """When the snapshot was created, ISO 8601 in UTC."""
        return self._head.timestamp

    @property
    def format_version(self) -> int:
        """The snapshot format this one was written in (see ``FORMAT_VERSION``)."""
        return self._head.format_version

    @property
    def metadata(self) -> dict[str, Any]:
        """Diagnostic metadata (``boundary``, ``superstep``, ...), a fresh dict per access."""
        head = self._head
        return self._decode(lambda: codec.from_builtins(head.metadata, path="metadata"))

    @property
    def state(self) -> dict[str, Any]:
        """The four state buckets, decoded into a fresh dict on every access."""
        record = self.record
        fmt = record.format
        return self._decode(
            lambda: {
                bucket: {
                    key: codec.decode(data, format=fmt, path=f"{bucket}.{key}")
                    for key, data in parts.items()
                }
                for bucket, parts in record.parts.items()
            }
        )

    def verify(self) -> None:
        """Check that the stored bytes are intact, without building any registered type.

        Raises ``CorruptCheckpointError`` naming the source for a malformed state part.
        Type ids this process has not registered pass here (tools may still inspect the
        snapshot); reading ``state`` then raises ``UnregisteredStateTypeError``.
        """
        record = self.record
        fmt = record.format
        self._decode(
            lambda: {
                f"{bucket}.{key}": codec.decode_for_inspection(data, format=fmt)
                for bucket, parts in record.parts.items()
                for key, data in parts.items()
            }
        )

    def _decode(self, decode: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        try:
            return decode()
        except (msgspec.DecodeError, msgspec.ValidationError, StateEncodingError) as exc:
            raise CorruptCheckpointError(
                f"snapshot {self.snapshot_id!r} cannot be decoded: {exc}", source=self._source
            ) from exc

    def __repr__(self) -> str:
        return (
            f"CheckpointSnapshot(snapshot_id={self.snapshot_id!r}, "
            f"parent_snapshot_id={self.parent_snapshot_id!r}, timestamp={self.timestamp!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CheckpointSnapshot):
            return NotImplemented
        return self.record == other.record

    def __hash__(self) -> int:
        return hash(self.snapshot_id)
