"""The fixed JSON shapes of the native API, rendered from host results.

Field names here are a public contract (clients outside this repository rely on them):
``conversation_id``, ``status`` (lower-case), ``outputs``, ``pending_requests`` (``request_id``,
``data``, ``response_schema``, ``source_executor_id``), ``resume_token`` (``checkpoint_id``,
``snapshot_id``), ``error`` (``code``, ``message``), and the snapshot list's
``snapshot_id``, ``parent_snapshot_id``, ``timestamp``, ``metadata``, ``is_head``.
This module must never do I/O or import the web framework.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from checkflow import state as codec
from checkflow.errors import CheckflowError, WorkflowConvergenceError
from checkflow.state import OpaqueValue
from checkflow.workflows import response_schema

if TYPE_CHECKING:
    from checkflow.checkpoints import CheckpointSnapshot
    from checkflow.hosting._results import ConversationState, HostedRunResult, ResumeToken
    from checkflow.workflows import PendingRequest

__all__ = [
    "error_body",
    "event_view",
    "inspect_metadata",
    "jsonable",
    "pending_view",
    "response_schema",
    "run_view",
    "snapshot_summary",
    "token_view",
]


def _fallback(value: Any) -> Any:
    if isinstance(value, BaseException):
        return {"type": type(value).__name__, "message": str(value)}
    for method in ("to_dict", "model_dump"):
        dump = getattr(value, method, None)
        if callable(dump):
            return dump()
    if codec.is_registered(type(value)):
        return _untagged(codec.to_builtins(value))
    return repr(value)


def _untagged(tree: Any) -> Any:
    """The codec's tagged tree with ``{"$type", "$value"}`` wrappers replaced by the value."""
    if isinstance(tree, dict):
        if set(tree) == {"$type", "$value"}:
            return _untagged(tree["$value"])
        return {k: _untagged(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_untagged(v) for v in tree]
    return tree


def _unwrap_opaque(value: Any) -> Any:
    if isinstance(value, OpaqueValue):
        return {"$opaque": value.type_id, "value": _unwrap_opaque(value.value)}
    if isinstance(value, dict):
        return {k: _unwrap_opaque(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_unwrap_opaque(v) for v in value]
    return value


def jsonable(value: Any) -> Any:
    """Any value a workflow produced as JSON-native data (records become objects).

    Unregistered, unknown objects never fail a response: they are shown by ``repr``; opaque
    values from an inspection decode become ``{"$opaque": type_id, "value": ...}``.
    """
    if type(value) in _NATIVE or (type(value) is list and all(type(v) in _NATIVE for v in value)):
        return value if type(value) is not list else list(value)  # already JSON's own
    return msgspec.to_builtins(_unwrap_opaque(value), enc_hook=_fallback, str_keys=True)


_NATIVE = frozenset({str, int, bool, type(None)})


def pending_view(request: PendingRequest) -> dict[str, Any]:
    """A pending request as the API shows it: the answer's JSON Schema, not a type name."""
    schema = getattr(request, "response_schema", None)
    return {
        "request_id": request.request_id,
        "data": jsonable(request.data),
        "response_schema": schema if isinstance(schema, dict) else response_schema(
            request.response_type),
        "source_executor_id": request.source_executor_id,
    }


def token_view(token: ResumeToken | None) -> dict[str, str] | None:
    """The resume token as the API shows it (``None`` before a first good head)."""
    if token is None:
        return None
    return {"checkpoint_id": token.checkpoint_id, "snapshot_id": token.snapshot_id}


def _body(
    conversation_id: str,
    status: Any,
    outputs: list[Any],
    pending: Mapping[str, PendingRequest],
    token: ResumeToken | None,
) -> dict[str, Any]:
    return {
        "conversation_id": conversation_id,
        "status": str(status.value).lower(),
        "outputs": jsonable(outputs),
        "pending_requests": [pending_view(p) for p in pending.values()],
        "resume_token": token_view(token),
    }


def run_view(result: HostedRunResult | ConversationState) -> dict[str, Any]:
    """A run body (this run's outputs) or a conversation body (all outputs so far)."""
    body = _body(
        result.conversation_id,
        result.status,
        result.outputs,
        result.pending_requests,
        result.resume_token,
    )
    error = getattr(result, "error", None)
    if error is not None:
        body["error"] = error_object(error)
    storage_head = getattr(result, "storage_head_snapshot_id", None)
    token = result.resume_token
    if storage_head is not None and token is not None and storage_head != token.snapshot_id:
        body["storage_head_snapshot_id"] = storage_head  # ahead after a failed turn
    turn = getattr(result, "turn", None)
    if getattr(result, "replayed", False) and turn is not None:  # the body's names stay fixed
        body["turn_id"] = turn.turn_id  # otherwise: a retry says what it repeats
        body["replayed"] = True
    return body


def error_object(error: BaseException) -> dict[str, Any]:
    """The ``error`` object of a failed run: what failed, in the workflow's own words."""
    cause = error.__cause__ if error.__cause__ is not None else error
    obj: dict[str, Any] = {
        "code": "workflow_failed",
        "message": str(cause) or type(cause).__name__,
        "type": type(cause).__name__,
    }
    executor_id = getattr(error, "executor_id", None)
    if executor_id is not None:
        obj["executor_id"] = executor_id
    if isinstance(error, WorkflowConvergenceError):
        obj["code"] = "workflow_did_not_converge"
    return obj


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    """``{"error": {"code", "message", ...details}}`` for every non-2xx answer."""
    return {"error": {"code": code, "message": message, **jsonable(details)}}


def event_view(event: Any) -> dict[str, Any]:
    """A workflow event as ``{"type": <class name>, "sequence", "timestamp", ...its fields}``
    (requests as in bodies; the timestamp in ISO 8601, UTC)."""
    body: dict[str, Any] = {"type": type(event).__name__}
    stamp = getattr(event, "timestamp", None)
    if stamp is not None:
        body["timestamp"] = stamp.isoformat()
    fields = dataclasses.fields(event) if dataclasses.is_dataclass(event) else ()
    for f in fields:
        if f.name.startswith("_"):
            continue
        value = getattr(event, f.name)
        body[f.name] = pending_view(value) if _is_pending(value) else jsonable(value)
    return body


def _is_pending(value: Any) -> bool:
    return all(hasattr(value, a) for a in ("request_id", "response_type", "source_executor_id"))


def inspect_metadata(snapshot: CheckpointSnapshot) -> dict[str, Any]:
    """The snapshot's metadata; its raw stored form if it holds types unknown here."""
    try:
        return snapshot.metadata
    except CheckflowError:
        return dict(snapshot.record.metadata)


def snapshot_summary(snapshot: CheckpointSnapshot, head_snapshot_id: str | None) -> dict[str, Any]:
    """A snapshot list entry; metadata holding types unknown here is shown as stored."""
    return {
        "snapshot_id": snapshot.snapshot_id,
        "parent_snapshot_id": snapshot.parent_snapshot_id,
        "timestamp": snapshot.timestamp,
        "metadata": jsonable(inspect_metadata(snapshot)),
        "is_head": snapshot.snapshot_id == head_snapshot_id,
    }
