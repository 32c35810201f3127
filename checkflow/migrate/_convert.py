"""One decoded v1 checkpoint file -> the four buckets of one v2 snapshot.

The mapping (the same layout the engine writes, ``docs/contracts.md``): v1 ``state`` minus
its reserved ``_``-keys -> ``workflow_state.shared_state``; ``state["_executor_state"]`` ->
``executor_states``; v1 queued messages that name their target and the pending request events
-> ``messages.pending``; ``messages.output`` and ``messages.input`` empty (v1 never stored
them); ``workflow_state.superstep`` is v1's ``iteration_count``. What does not map (a message
v1 would have routed by its edges, an in-flight response, fan-in buffers) is reported as a
note, never guessed. This module reads decoded values only; it must never touch a storage.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

from checkflow.errors import MigrationError
from checkflow.migrate._unpickle import V1Object

__all__ = ["V1Checkpoint", "to_v2_state"]

_EXECUTOR_STATE = "_executor_state"
_EDGE_STATE = "_edge_state"
_INTERNAL_SOURCE = "internal:"  # v1's source id for the run's input message


@dataclass
class V1Checkpoint:
    """One v1 file, decoded (values unpickled under the restrictions)."""

    file: str
    checkpoint_id: str
    previous_checkpoint_id: str | None
    workflow_name: str
    graph_signature_hash: str
    timestamp: str
    iteration_count: int
    state: dict[str, Any]
    messages: dict[str, list[Any]]
    pending_requests: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _type_name(tp: Any) -> str:
    """How the engine names a response type: builtins bare, others ``module.QualName``."""
    if not isinstance(tp, type):
        raise MigrationError(f"a response type that is not a class: {tp!r}")
    name: str = tp.__name__
    if getattr(builtins, name, None) is tp:
        return name
    return f"{tp.__module__}.{tp.__qualname__}"


def _fields(value: Any, v1_type: str, file: str) -> dict[str, Any]:
    if not isinstance(value, V1Object) or not value.v1_type.endswith(v1_type):
        raise MigrationError(f"{file}: expected a v1 {v1_type}, found {type(value).__name__}")
    return value.fields


def _deliveries(checkpoint: V1Checkpoint) -> list[dict[str, Any]]:
    found = []
    for messages in checkpoint.messages.values():
        for message in messages:
            fields = _fields(message, ":WorkflowMessage", checkpoint.file)
            source, target = fields.get("source_id"), fields.get("target_id")
            if fields.get("type", "standard") != "standard":
                checkpoint.notes.append(
                    f"an in-flight {fields.get('type')} message from {source!r} was not "
                    "migrated (answer the request again after resuming)")
                continue
            if target is None:
                checkpoint.notes.append(
                    f"a message from {source!r} without a target (v1 routed it by its edges "
                    "in the next superstep) was not migrated: resuming from this snapshot "
                    "would not deliver it")
                continue
            if isinstance(source, str) and source.startswith(_INTERNAL_SOURCE):
                source = None  # the run's input
            found.append({"kind": "message", "source": source, "target": target,
                          "data": fields.get("data")})
    return found


def _requests(checkpoint: V1Checkpoint) -> dict[str, dict[str, Any]]:
    found = {}
    for request_id, event in checkpoint.pending_requests.items():
        fields = _fields(event, ":WorkflowEvent", checkpoint.file)
        found[request_id] = {
            "request_id": fields.get("_request_id", request_id),
            "source_executor_id": fields.get("_source_executor_id"),
            "data": fields.get("data"),
            "response_type": _type_name(fields.get("_response_type")),
        }
    return found


def to_v2_state(checkpoint: V1Checkpoint) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state, metadata) of the v2 snapshot for ``checkpoint``; notes go on ``checkpoint``."""
    state = dict(checkpoint.state)
    executors = state.pop(_EXECUTOR_STATE, {}) or {}
    if not isinstance(executors, dict):
        raise MigrationError(f"{checkpoint.file}: _executor_state is not a mapping")
    if state.pop(_EDGE_STATE, None):
        checkpoint.notes.append("v1 fan-in buffers (_edge_state) were not migrated")
    dropped = sorted(k for k in state if k.startswith("_"))  # v1's run kwargs and the like
    shared = {k: v for k, v in state.items() if not k.startswith("_")}
    deliveries = _deliveries(checkpoint)
    requests = _requests(checkpoint)
    status = ("running" if deliveries else "awaiting_responses" if requests else "idle")
    v2_state = {
        "workflow_state": {"status": status, "superstep": checkpoint.iteration_count,
                           "shared_state": shared},
        "executor_states": {str(k): v for k, v in executors.items()},
        "edge_states": {},
        "messages": {"input": [], "pending": {"messages": deliveries, "requests": requests},
                     "output": []},
    }
    metadata: dict[str, Any] = {
        "boundary": ("input_accepted" if checkpoint.previous_checkpoint_id is None
                     else "superstep_completed"),
        "superstep": checkpoint.iteration_count,
        "status": status,
        "migrated_from_v1": checkpoint.checkpoint_id,
    }
    if dropped:
        metadata["v1_dropped_keys"] = dropped
    if checkpoint.notes:
        metadata["v1_notes"] = list(checkpoint.notes)
    return v2_state, metadata
