"""``inspect_snapshot``: the engine's own reading of a snapshot, for everyone who shows one.

Hosting, the command line and the protocol adapters need a snapshot's status, pending
requests and outputs without running anything; only the engine knows how a run lays them out
in the four buckets (``_runstate``), so this is the one place outside the runner that reads
them. With the ``workflow`` at hand values decode exactly and response types resolve to the
type objects; without it (a tool that lacks the workflow's code) values unknown to this
process stay ``OpaqueValue``s and response types are known by name only. This module must
never write state, run a workflow or touch a storage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checkflow import state as codec
from checkflow.checkpoints import CheckpointSnapshot
from checkflow.errors import CorruptCheckpointError, StateError
from checkflow.workflows._results import PendingRequest, RunStatus
from checkflow.workflows._runstate import read_facts, read_pending_ids, read_shared, shared_bytes
from checkflow.workflows._schema import response_schema
from checkflow.workflows._typing import builtin_type

if TYPE_CHECKING:
    from checkflow.workflows._workflow import Workflow

__all__ = [
    "PendingRequestView",
    "SnapshotView",
    "inspect_shared_state",
    "inspect_snapshot",
    "pending_request_ids",
    "same_shared_state",
]


@dataclass(frozen=True, slots=True)
class PendingRequestView(PendingRequest):
    """A pending request as stored, with its response type's name and JSON Schema.

    ``response_type`` is ``None`` when it cannot be resolved here (no workflow given and not
    a builtin); ``response_schema`` is then ``{}``.
    """

    response_type_name: str = ""
    response_schema: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class SnapshotView:
    """What a snapshot says about its run: status, lifetime superstep, requests, outputs."""

    snapshot_id: str
    parent_snapshot_id: str | None
    timestamp: str
    boundary: str | None
    status: RunStatus
    superstep: int
    pending_requests: Mapping[str, PendingRequestView]
    outputs: list[Any]
    """Every output along the lineage up to this snapshot."""
    shared_state: dict[str, Any]


def inspect_snapshot(
    snapshot: CheckpointSnapshot, *, workflow: Workflow | None = None
) -> SnapshotView:
    """The typed view of ``snapshot``, computed by the engine's own layout code.

    Decodes only the parts it shows, so executor or edge state holding a type this process
    does not know never stops a snapshot from being shown. Raises ``CorruptCheckpointError``
    when the snapshot is not a workflow run state; with ``workflow`` given, a stored value of
    an unregistered type raises ``UnregisteredStateTypeError`` (a ``StateError``).
    """
    record = snapshot.record
    fmt = record.format

    def decode_part(bucket: str, key: str, data: bytes) -> Any:
        if workflow is None:
            return codec.decode_for_inspection(data, format=fmt)
        return codec.decode(data, format=fmt, path=f"{bucket}.{key}")

    try:
        facts = read_facts(record, decode_part)
        status = RunStatus(facts["status"])
        superstep = int(facts["superstep"])
        pending = {rid: _request(raw, workflow) for rid, raw in facts["requests"].items()}
        outputs = list(facts["outputs"])
        shared = dict(facts["shared_state"])
    except StateError:
        raise  # a value this process cannot decode: say so, it is not damage
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptCheckpointError(
            f"snapshot {snapshot.snapshot_id!r} is not a workflow run state "
            f"({type(exc).__name__}: {exc})") from exc
    metadata = record.metadata
    boundary = metadata.get("boundary") if isinstance(metadata, dict) else None
    return SnapshotView(
        snapshot_id=snapshot.snapshot_id,
        parent_snapshot_id=snapshot.parent_snapshot_id,
        timestamp=snapshot.timestamp,
        boundary=boundary if isinstance(boundary, str) else None,
        status=status,
        superstep=superstep,
        pending_requests=pending,
        outputs=outputs,
        shared_state=shared,
    )


def inspect_shared_state(
    snapshot: CheckpointSnapshot, *, workflow: Workflow | None = None
) -> dict[str, Any]:
    """The shared state at ``snapshot``, decoding no other part of it (cheap beside
    ``inspect_snapshot``, which decodes every output of the lineage). Values decode as in
    ``inspect_snapshot``; raises ``CorruptCheckpointError`` for a snapshot that is not a
    workflow run state."""
    fmt = snapshot.record.format

    def decode_part(bucket: str, key: str, data: bytes) -> Any:
        if workflow is None:
            return codec.decode_for_inspection(data, format=fmt)
        return codec.decode(data, format=fmt, path=f"{bucket}.{key}")

    try:
        return dict(read_shared(snapshot.record, decode_part))
    except StateError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptCheckpointError(
            f"snapshot {snapshot.snapshot_id!r} is not a workflow run state "
            f"({type(exc).__name__}: {exc})") from exc


def same_shared_state(first: CheckpointSnapshot, second: CheckpointSnapshot) -> bool:
    """True when the two snapshots' shared state is surely the same (its stored bytes are),
    without decoding it; False when it may differ."""
    try:
        return shared_bytes(first.record) == shared_bytes(second.record)
    except (KeyError, TypeError, AttributeError):
        return False


def _request(raw: Mapping[str, Any], workflow: Workflow | None) -> PendingRequestView:
    name = str(raw["response_type"])
    response_type = workflow.resolve_type(name) if workflow is not None else builtin_type(name)
    return PendingRequestView(
        request_id=raw["request_id"],
        data=raw["data"],
        response_type=response_type,
        source_executor_id=raw["source_executor_id"],
        response_type_name=name,
        response_schema=response_schema(response_type) if response_type is not None else {},
    )


def pending_request_ids(snapshot: CheckpointSnapshot) -> list[str]:
    """The ids of the requests pending at ``snapshot`` (cheap: reads only that part)."""
    try:
        return read_pending_ids(snapshot.record)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptCheckpointError(
            f"snapshot {snapshot.snapshot_id!r} is not a workflow run state "
            f"({type(exc).__name__}: {exc})") from exc
