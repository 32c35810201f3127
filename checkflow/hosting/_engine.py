"""The few facts the host reads from the engine's snapshots, in one place.

For a stored conversation the host needs the head's status, outputs and pending requests
without running anything (the start executor's input types are ``Workflow.input_types``). The
snapshot layout is the engine's (``workflow_state.status``, ``messages.output``,
``messages.pending.requests``); this module is the only hosting code that knows it.
It must never write state or run a workflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkflow import state as codec
from checkflow.checkpoints import CheckpointSnapshot
from checkflow.errors import CorruptCheckpointError, StateError
from checkflow.workflows import PendingRequest, RunStatus, Workflow

__all__ = ["HeadFacts", "head_facts", "inspected_requests"]

HeadFacts = tuple[RunStatus, list[Any], Mapping[str, PendingRequest]]


def head_facts(workflow: Workflow, snapshot: CheckpointSnapshot) -> HeadFacts:
    """Status, every output along the lineage, and pending requests at ``snapshot``.

    Decodes only the parts it reads (the status, ``messages.output`` and
    ``messages.pending``), so executor or edge state holding a type this process does not
    know never stops a conversation from being shown.
    """
    record = snapshot.record
    try:
        parts = record.parts

        def part(bucket: str, key: str) -> Any:
            return codec.decode(parts[bucket][key], format=record.format,
                                path=f"{bucket}.{key}")

        status = RunStatus(part("workflow_state", "status"))
        outputs = list(part("messages", "output"))
        raw_requests = part("messages", "pending")["requests"]
        pending = {
            request_id: PendingRequest(
                request_id=raw["request_id"],
                data=raw["data"],
                response_type=workflow.resolve_type(raw["response_type"]),
                source_executor_id=raw["source_executor_id"],
            )
            for request_id, raw in raw_requests.items()
        }
    except StateError:
        raise  # a value this process cannot decode: say so, it is not damage
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptCheckpointError(
            f"snapshot {snapshot.snapshot_id!r} is not a workflow run state ({exc!r})"
        ) from exc
    return status, outputs, pending


def inspected_requests(state: Mapping[str, Any]) -> list[Any]:
    """The pending requests in an inspection-decoded state (as stored: type names, raw data)."""
    pending = state.get("messages", {}).get("pending")
    requests = pending.get("requests") if isinstance(pending, dict) else None
    return list(requests.values()) if isinstance(requests, dict) else []
