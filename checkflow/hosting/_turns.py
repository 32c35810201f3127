"""A conversation's turns, read from where they are recorded: snapshots and the session.

Every snapshot a hosted turn commits carries ``metadata["turn"]`` (its id, idempotency key
and protocol; the first also the protocol's own data, ``TurnOrigin.data``), so the turns on a
conversation's lineage are derived from the checkpoint alone. A turn that did not move the
conversation's head (failed, cancelled, or whose owner died) is recorded by the session's own
writes instead: the lease names the running turn, and the lease's end (or a takeover) appends
its outcome to ``state["turns"]``. This module only reads and shapes those records; it must
never write to a store.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from checkflow.workflows import (
    OutputEvent,
    RequestInfoEvent,
    RunStatus,
    SnapshotCommittedEvent,
    WorkflowEvent,
    WorkflowStatusEvent,
    inspect_snapshot,
)

if TYPE_CHECKING:
    from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
    from checkflow.workflows import PendingRequest, Workflow

__all__ = [
    "OUTCOMES_KEY",
    "TurnOrigin",
    "TurnRecord",
    "TurnState",
    "lineage_turns",
    "outcome_events",
    "record_outcome",
    "turn_mark",
]

OUTCOMES_KEY = "turns"
"""Session key: the outcomes of the latest turns that did not move the head, newest last."""

MAX_OUTCOMES = 32
TurnState = Literal["committed", "running", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class TurnOrigin:
    """Where a turn came from: the protocol's name and its own small data.

    ``data`` (JSON-able: ids, the input as the client sent it) is committed with the turn's
    first snapshot, so an adapter can render its view of the turn from the checkpoint alone.
    It counts against the host's ``max_record_bytes``.
    """

    protocol: str = "native"
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn as recorded: identity, origin, where it sits and how it ended.

    For a committed turn (``state == "committed"``, on the conversation's lineage)
    ``first_snapshot_id``/``last_snapshot_id`` bound its snapshots and ``status``,
    ``outputs`` and ``pending_requests`` are as of its last snapshot (``outputs``: this
    turn's own). A turn off the lineage has no snapshots to show: ``error`` says why.
    """

    turn_id: str
    idempotency_key: str | None
    protocol: str
    data: Mapping[str, Any]
    state: TurnState
    status: RunStatus
    first_snapshot_id: str | None = None
    last_snapshot_id: str | None = None
    outputs: Sequence[Any] = ()
    pending_requests: Mapping[str, PendingRequest] = field(default_factory=dict)
    error: str | None = None


def turn_mark(turn_id: str, key: str | None, origin: TurnOrigin) -> tuple[
        dict[str, Any], dict[str, Any]]:
    """The metadata every snapshot of the turn carries, and the first one's (with data)."""
    mark: dict[str, Any] = {"id": turn_id, "protocol": origin.protocol}
    if key is not None:
        mark["key"] = key
    return mark, {**mark, "data": dict(origin.data)} if origin.data else mark


def lineage_turns(checkpoint: Checkpoint, head: str | None, workflow: Workflow | None
                  ) -> list[TurnRecord]:
    """The turns on ``head``'s lineage, oldest first (snapshots of no turn are skipped)."""
    if head is None:
        return []
    groups: list[tuple[str, list[CheckpointSnapshot]]] = []
    for snapshot in _lineage(checkpoint, head):
        mark = snapshot.metadata.get("turn")
        if not isinstance(mark, dict) or not isinstance(mark.get("id"), str):
            continue
        if groups and groups[-1][0] == mark["id"]:
            groups[-1][1].append(snapshot)
        else:
            groups.append((mark["id"], [snapshot]))
    records, seen = [], 0
    for turn_id, snapshots in groups:
        record, seen = _committed(turn_id, snapshots, seen, workflow)
        records.append(record)
    return records


def _lineage(checkpoint: Checkpoint, head: str) -> list[CheckpointSnapshot]:
    """Root first, ``head`` last."""
    chain, current = [], checkpoint.get_snapshot(head)
    while True:
        chain.append(current)
        parent = current.parent_snapshot_id
        if parent is None:
            break
        current = checkpoint.get_snapshot(parent)
    chain.reverse()
    return chain


def _committed(turn_id: str, snapshots: list[CheckpointSnapshot], seen: int,
               workflow: Workflow | None) -> tuple[TurnRecord, int]:
    first, last = snapshots[0], snapshots[-1]
    mark = first.metadata["turn"]
    view = inspect_snapshot(last, workflow=workflow)
    outputs = view.outputs[seen:]
    return TurnRecord(
        turn_id, mark.get("key"), str(mark.get("protocol", "native")),
        dict(mark.get("data") or {}), "committed", view.status,
        first.snapshot_id, last.snapshot_id, outputs, dict(view.pending_requests),
    ), len(view.outputs)


def record_outcome(state: dict[str, Any], turn: Mapping[str, Any], status: str,
                   error: str | None) -> None:
    """Append a turn that did not move the head to the session's outcomes (bounded)."""
    outcomes = [o for o in state.get(OUTCOMES_KEY, ()) if isinstance(o, dict)
                and o.get("id") != turn.get("id")]
    outcomes.append({**turn, "status": status, "error": error, "at": time.time()})
    state[OUTCOMES_KEY] = outcomes[-MAX_OUTCOMES:]


def recorded_outcome(state: Mapping[str, Any], *, turn_id: str | None = None,
                     key: str | None = None) -> TurnRecord | None:
    """The session's record of a turn off the lineage, by id or idempotency key."""
    for outcome in reversed(list(state.get(OUTCOMES_KEY, ()))):
        if not isinstance(outcome, dict):
            continue
        if (turn_id is not None and outcome.get("id") == turn_id) or (
                key is not None and outcome.get("key") == key):
            cancelled = outcome.get("status") == "cancelled"
            return TurnRecord(
                str(outcome.get("id")), outcome.get("key"),
                str(outcome.get("protocol", "native")), dict(outcome.get("data") or {}),
                "cancelled" if cancelled else "failed",
                RunStatus.CANCELLED if cancelled else RunStatus.FAILED,
                error=outcome.get("error"))
    return None


def outcome_events(record: TurnRecord, snapshots: Sequence[CheckpointSnapshot] = (),
                   start: int = 0) -> list[WorkflowEvent]:
    """The events that tell a follower a turn's outcome, numbered from ``start + 1``.

    For each of ``snapshots`` (the turn's committed ones a follower has not seen) a
    ``SnapshotCommittedEvent``; then, when ``record`` is final, its outputs, pending requests
    and status. What only the owner saw (executor events, token deltas) is not among them.
    """
    events: list[WorkflowEvent] = []
    for snapshot in snapshots:
        metadata = snapshot.metadata
        events.append(SnapshotCommittedEvent(
            snapshot.snapshot_id, snapshot.parent_snapshot_id,
            str(metadata.get("boundary", "")), int(metadata.get("superstep", 0))))
    if record.state != "running":
        events.extend(OutputEvent("", output) for output in record.outputs)
        events.extend(RequestInfoEvent(request) for request in record.pending_requests.values())
        events.append(WorkflowStatusEvent(record.status))
    for number, event in enumerate(events, start + 1):
        event.sequence = number
    return events
