"""The live execution state of one run, and its exact mapping to the four snapshot buckets.

A ``RunState`` is hydrated from ONE decoded head snapshot and exported whole at each commit
(the commit's encoding is the copy, so live objects are handed over as they are). The shape:

- ``workflow_state``: ``status``, ``superstep`` (lifetime counter), ``shared_state``;
- ``executor_states``: ``{executor_id: {...}}`` (what handlers keep in ``ctx.executor_state``);
- ``edge_states``: ``{edge_group_id: {...}}`` (fan-in buffers);
- ``messages``: ``input`` (accepted inputs, along the lineage), ``output`` (yielded outputs,
  along the lineage) and ``pending`` = ``{"messages": [deliveries for the next superstep],
  "requests": {request_id: request}}``.

Only what may have changed is encoded again: the bytes of every part of the last snapshot are
kept, and a part nothing reached is handed to the commit as an ``EncodedPart``. The pending
part changes at almost every commit, but most of it is requests that wait unchanged: the bytes
of each request hydrated from the head are kept too, and ``messages.pending`` is assembled
from them and the freshly encoded rest (``_pending_bytes``), exactly as encoding it whole would
write it, so a thousand waiting requests are not re-encoded at every superstep. The rule that
makes this sound: a part user code reached in this run (``reach()``: ``get_state``,
``set_state``, ``ctx.executor_state``, fan-in buffers, outputs) is encoded afresh at EVERY
later commit of the run, because a reference handed out may be mutated in any later superstep
(e.g. by the receiver of a message that carries it). A part no code reached in this run holds
objects nobody but this module has seen since they were decoded. Parts only the runner wrote
(``record()``) are encoded at the next commit only: the input log keeps the values as
accepted (nothing reads it back during a run), and shared state written by ``set_state``
but never read in this run continues from the committed copy, so a reference the writer kept
cannot change it behind the snapshot's back. That copy is decoded lazily (``live_shared``):
a superstep that overwrites every key of the shared state never decodes the old one.

This module must never touch a checkpoint, a storage or the definition objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from checkflow.checkpoints import CheckpointSnapshot, EncodedPart, Format, SnapshotRecord
from checkflow.errors import CorruptCheckpointError
from checkflow.state import decode, decode_for_inspection, encode
from checkflow.workflows._results import PendingRequest, RunStatus
from checkflow.workflows._typing import type_name

__all__ = ["RunState"]

Part = tuple[str, str]
SHARED: Part = ("workflow_state", "shared_state")
INPUT: Part = ("messages", "input")
OUTPUT: Part = ("messages", "output")
_NONE: dict[str, bytes] = {}


class RunState:
    """Mutable, run-scoped execution state (never reachable from a Workflow)."""

    __slots__ = (
        "changed",
        "deliveries",
        "edges",
        "executors",
        "inputs",
        "outputs",
        "parts",
        "parts_format",
        "reached",
        "request_bytes",
        "requests",
        "shared",
        "stale_shared",
        "status",
        "superstep",
    )

    def __init__(self) -> None:
        self.status = RunStatus.IDLE
        self.superstep = 0
        self.shared: dict[str, Any] = {}
        # (bytes, format, keys) of the committed shared state ``shared`` no longer holds
        self.stale_shared: tuple[bytes, Any, frozenset[str]] | None = None
        self.executors: dict[str, dict[str, Any]] = {}
        self.edges: dict[str, Any] = {}
        self.inputs: list[Any] = []
        self.outputs: list[Any] = []
        self.deliveries: list[dict[str, Any]] = []
        self.requests: dict[str, PendingRequest] = {}
        # the last committed (or loaded) record's part bytes, and their format
        self.parts: dict[str, dict[str, bytes]] = {}
        self.parts_format: Format = "json"
        self.reached: set[Part] = set()
        self.changed: set[Part] = set()
        # the encoded bytes of requests hydrated from the head, by id, with the object they
        # decoded to (reused while that very object is still pending), and their format
        self.request_bytes: tuple[Format, dict[str, tuple[PendingRequest, bytes]]] | None = None

    def reach(self, bucket: str, key: str) -> None:
        """Mark a part user code reached: every later commit of this run encodes it again."""
        self.reached.add((bucket, key))

    def record(self, bucket: str, key: str) -> None:
        """Mark a part only the runner wrote: the next commit encodes it again."""
        self.changed.add((bucket, key))

    def remember(self, record: SnapshotRecord) -> None:
        """Keep a committed (or loaded) snapshot's part bytes for reuse."""
        fmt = record.format
        self.parts, self.parts_format = record.parts, fmt  # immutable: kept as they are
        if SHARED in self.changed and SHARED not in self.reached:
            # continue from the committed copy, decoded only when something reads it
            self.stale_shared = (record.parts[SHARED[0]][SHARED[1]], fmt,
                                 frozenset(self.shared))
            self.shared = {}
        self.changed.clear()

    def live_shared(self) -> dict[str, Any]:
        """The shared state, decoding the committed copy first if ``remember`` left it stale."""
        stale = self.stale_shared
        if stale is not None:
            self.stale_shared = None
            self.shared = decode(stale[0], format=stale[1], path="shared_state")
        return self.shared

    def update_shared(self, staged: dict[str, Any]) -> None:
        """Apply ``set_state`` writes; when they replace every key, nothing old is decoded."""
        stale = self.stale_shared
        if stale is not None and stale[2].issubset(staged):
            self.stale_shared = None
            self.shared = dict(staged)
            return
        self.live_shared().update(staged)

    def _part(self, bucket: str, key: str, value: Any) -> Any:
        part = (bucket, key)
        if part in self.reached or part in self.changed:
            return value
        data = self.parts.get(bucket, _NONE).get(key)
        return value if data is None else EncodedPart(data, self.parts_format)

    @classmethod
    def hydrate(cls, head: CheckpointSnapshot | None, resolve: Callable[[str], Any],
                checkpoint_id: str) -> RunState:
        """Build from the head snapshot, decoded once (``None``: a fresh checkpoint).

        ``resolve`` turns a stored response-type name back into the type object.
        """
        run = cls()
        if head is None:
            return run
        state = head.state
        run.remember(head.record)
        try:
            wf = state["workflow_state"]
            run.status = RunStatus(wf["status"])
            run.superstep = int(wf["superstep"])
            run.shared = wf["shared_state"]
            run.executors = state["executor_states"]
            run.edges = state["edge_states"]
            messages = state["messages"]
            run.inputs = messages["input"]
            run.outputs = messages["output"]
            run.deliveries = messages["pending"]["messages"]
            requests = messages["pending"]["requests"]
            for request_id, raw in requests.items():
                run.requests[request_id] = _request_from_state(raw, resolve, checkpoint_id)
            run.request_bytes = _slice_requests(head.record, run.requests)
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptCheckpointError(
                f"the head snapshot is not a workflow run state ({type(exc).__name__}: {exc})",
                source=f"checkpoint {checkpoint_id!r}") from exc
        return run

    def export(self, type_ref: Callable[[Any], str | None], fmt: Format) -> dict[str, Any]:
        """The four buckets, referencing the live objects (the commit encodes them at once).

        ``type_ref`` names a pending request's response type for storage; ``fmt`` is the
        encoding of the commit (the pending part is encoded here, see ``_pending``).
        """
        part = self._part
        return {
            "workflow_state": {
                "status": self.status.value,
                "superstep": self.superstep,
                "shared_state": part(*SHARED, self.shared),
            },
            "executor_states": {
                key: part("executor_states", key, value) for key, value in self.executors.items()
            },
            "edge_states": {
                key: part("edge_states", key, value) for key, value in self.edges.items()},
            "messages": {
                "input": part(*INPUT, self.inputs),
                "pending": self._pending(type_ref, fmt),
                "output": part(*OUTPUT, self.outputs),
            },
        }

    def _pending(self, type_ref: Callable[[Any], str | None], fmt: Format) -> EncodedPart:
        """``messages.pending``, always in the codec's tagged layout, so that a later run can
        cut each waiting request's bytes out of it and reuse them (``_slice_requests``)."""
        if "$type" in self.requests:  # the tagged layout escapes this map: encode it whole
            whole = {"messages": self.deliveries, "requests": {
                rid: _request_to_state(request, type_ref)
                for rid, request in self.requests.items()}}
            return EncodedPart(encode(whole, format=fmt, path="messages.pending",
                                      layout="tagged"), fmt)
        known = self.request_bytes
        reusable = known[1] if known is not None and known[0] == fmt else {}
        encoded = []
        for rid, request in self.requests.items():
            hit = reusable.get(rid)
            if hit is not None and hit[0] is request:
                encoded.append((rid, hit[1]))
            else:
                state = _request_to_state(request, type_ref)
                encoded.append((rid, encode(state, format=fmt, path=f"pending.{rid}",
                                            layout="tagged")))
        deliveries = _EMPTY_LIST[fmt] if not self.deliveries else encode(
            self.deliveries, format=fmt, path="messages.pending.messages", layout="tagged")
        return EncodedPart(_pending_bytes(fmt, deliveries, encoded), fmt)

    def settled_status(self) -> RunStatus:
        """RUNNING while deliveries wait, else AWAITING_RESPONSES or IDLE."""
        if self.deliveries:
            return RunStatus.RUNNING
        return RunStatus.AWAITING_RESPONSES if self.requests else RunStatus.IDLE


_KEYS = {fmt: {key: encoder.encode(key) for key in ("messages", "requests")}
         for fmt, encoder in (("json", msgspec.json.Encoder()),
                              ("msgpack", msgspec.msgpack.Encoder()))}
_EMPTY_LIST = {"json": b"[]", "msgpack": b"\x90"}
_SLICES: dict[str, Any] = {"json": msgspec.json.Decoder(dict[str, msgspec.Raw]),
                           "msgpack": msgspec.msgpack.Decoder(dict[str, msgspec.Raw])}


def _slice_requests(
    record: SnapshotRecord, requests: dict[str, PendingRequest]
) -> tuple[Format, dict[str, tuple[PendingRequest, bytes]]] | None:
    """Each hydrated request's own bytes, cut out of the head's pending part (no decoding)."""
    fmt = record.format
    try:
        pending = _SLICES[fmt].decode(record.parts["messages"]["pending"])
        if set(pending) != {"messages", "requests"}:
            return None  # e.g. an escaped mapping: encode it whole
        raw = _SLICES[fmt].decode(pending["requests"])
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError):
        return None
    if "$type" in raw or raw.keys() != requests.keys():
        return None
    return fmt, {rid: (requests[rid], bytes(raw[rid])) for rid in raw}


def _pending_bytes(fmt: Format, deliveries: bytes, requests: list[tuple[str, bytes]]) -> bytes:
    """The bytes ``encode({"messages": ..., "requests": {...}})`` writes, from encoded pieces."""
    keys = _KEYS[fmt]
    if fmt == "json":
        body = b",".join(_JSON_KEY(rid) + b":" + data for rid, data in requests)
        return b"".join((b"{", keys["messages"], b":", deliveries, b",", keys["requests"],
                         b":{", body, b"}}"))
    body = b"".join(_MSGPACK_KEY(rid) + data for rid, data in requests)
    return b"".join((b"\x82", keys["messages"], deliveries, keys["requests"],
                     _msgpack_map_header(len(requests)), body))


_JSON_KEY = msgspec.json.Encoder().encode
_MSGPACK_KEY = msgspec.msgpack.Encoder().encode


def _msgpack_map_header(size: int) -> bytes:
    if size < 16:
        return bytes((0x80 | size,))
    if size < 1 << 16:
        return b"\xde" + size.to_bytes(2, "big")
    return b"\xdf" + size.to_bytes(4, "big")


def _request_to_state(
    request: PendingRequest, type_ref: Callable[[Any], str | None]
) -> dict[str, Any]:
    return {
        "request_id": request.request_id,
        "source_executor_id": request.source_executor_id,
        "data": request.data,
        "response_type": type_ref(request.response_type) or type_name(request.response_type),
    }


def _request_from_state(
    raw: dict[str, Any], resolve: Callable[[str], Any], checkpoint_id: str
) -> PendingRequest:
    name = raw["response_type"]
    response_type = resolve(name)
    if response_type is None:
        raise CorruptCheckpointError(
            f"pending request {raw['request_id']!r} expects a response of type {name!r}, "
            "which no handler of this workflow names",
            source=f"checkpoint {checkpoint_id!r}")
    return PendingRequest(
        request_id=raw["request_id"],
        data=raw["data"],
        response_type=response_type,
        source_executor_id=raw["source_executor_id"],
    )


def read_facts(record: SnapshotRecord, decode_part: Callable[[str, str, bytes], Any]
               ) -> dict[str, Any]:
    """The facts ``inspect_snapshot`` shows, read from a record's parts by ``decode_part``
    (the exact codec or the inspection decode): the only other reader of this layout.

    Keys: ``status``, ``superstep``, ``shared_state``, ``outputs`` and ``requests`` (the
    stored request mappings by id).
    """
    parts = record.parts

    def part(bucket: str, key: str) -> Any:
        return decode_part(bucket, key, parts[bucket][key])

    return {
        "status": part("workflow_state", "status"),
        "superstep": part("workflow_state", "superstep"),
        "shared_state": part(*SHARED) if SHARED[1] in parts["workflow_state"] else {},
        "outputs": part(*OUTPUT),
        "requests": part("messages", "pending")["requests"],
    }


def read_shared(record: SnapshotRecord, decode_part: Callable[[str, str, bytes], Any]) -> Any:
    """The shared state of a record, decoding no other part of it."""
    stored = record.parts["workflow_state"]
    return decode_part(*SHARED, stored[SHARED[1]]) if SHARED[1] in stored else {}


def shared_bytes(record: SnapshotRecord) -> tuple[str, bytes | None]:
    """The shared state's encoded part and its format. Equal for two records, the shared
    state is the same (a commit reuses an untouched part's bytes); unequal, it may be."""
    return record.format, record.parts["workflow_state"].get(SHARED[1])


def read_pending_ids(record: SnapshotRecord) -> list[str]:
    """The ids of the requests pending at a record, decoding nothing else of it."""
    data = record.parts["messages"]["pending"]
    return list(decode_for_inspection(data, format=record.format)["requests"])
