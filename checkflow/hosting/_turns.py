"""A conversation's turns, read from where they are recorded: snapshots and the session.

Every snapshot a hosted turn commits carries ``metadata["turn"]`` (its id, idempotency key
and protocol; the first also the protocol's own data, ``TurnOrigin.data``), so the turns of
a conversation are derived from the checkpoint alone. A turn that did not move the
conversation's head (failed, cancelled, or whose owner died) is recorded by the session's own
writes instead: the lease names the running turn (with its data), and the lease's end (or a
takeover) appends its outcome to ``state["turns"]``. This module only reads and shapes those
records; it must never do I/O.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from checkflow.workflows import RunStatus, inspect_snapshot, pending_request_ids

if TYPE_CHECKING:
    from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
    from checkflow.workflows import PendingRequest, Workflow

__all__ = [
    "DEAD_OWNER",
    "OUTCOMES_KEY",
    "TurnOrigin",
    "TurnRecord",
    "TurnState",
    "answered_requests",
    "iso_time",
    "key_on_lineage",
    "lineage_turns",
    "locate_turn",
    "record_outcome",
    "recorded_outcome",
    "turn_mark",
    "turns_from",
]

OUTCOMES_KEY = "turns"
"""Session key: the outcomes of the latest turns that did not move the head, newest last."""

MAX_OUTCOMES = 16
DEAD_OWNER = "the process running this turn stopped before it ended (its lease was taken over)"
TurnState = Literal["committed", "running", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class TurnOrigin:
    """Where a turn came from: the protocol's name and its own small data.

    ``data`` (JSON-able: ids, the input as the client sent it) is committed with the turn's
    first snapshot (and named by its lease while it runs), so an adapter can render its view
    of the turn from the stores alone. It counts against the host's ``max_record_bytes``.
    """

    protocol: str = "native"
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn as recorded: identity, origin, where it sits and how it ended.

    A committed turn (``state == "committed"``) has snapshots: ``first_snapshot_id`` and
    ``last_snapshot_id`` bound them in ``checkpoint_id``, and ``status``, ``outputs`` (this
    turn's own) and ``pending_requests`` are as of the last one; ``on_lineage`` says whether
    it is on the conversation's line (a branch leaves the other line's turns off it). A
    failed or cancelled turn, or a running one, has ``error`` or nothing to show yet.
    ``started_at``/``ended_at`` are ISO 8601 UTC times (``ended_at`` ``None`` while running).
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
    on_lineage: bool = True
    checkpoint_id: str | None = None
    started_at: str | None = None
    ended_at: str | None = None


def turn_mark(turn_id: str, key: str | None, origin: TurnOrigin) -> tuple[
        dict[str, Any], dict[str, Any]]:
    """The metadata every snapshot of the turn carries, and the first one's (with data)."""
    mark: dict[str, Any] = {"id": turn_id, "protocol": origin.protocol}
    if key is not None:
        mark["key"] = key
    return mark, {**mark, "data": dict(origin.data)} if origin.data else mark


def _mark_of(snapshot: CheckpointSnapshot) -> dict[str, Any] | None:
    mark = snapshot.metadata.get("turn")
    return mark if isinstance(mark, dict) and isinstance(mark.get("id"), str) else None


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


def key_on_lineage(checkpoint: Checkpoint, head: str, key: str) -> bool:
    """Whether a snapshot on ``head``'s lineage records a turn of idempotency key ``key``
    (metadata only: nothing is decoded)."""
    return any((mark := _mark_of(s)) is not None and mark.get("key") == key
               for s in _lineage(checkpoint, head))


def lineage_turns(checkpoint: Checkpoint, head: str | None, workflow: Workflow | None
                  ) -> list[TurnRecord]:
    """The turns on ``head``'s lineage, oldest first (snapshots of no turn are skipped)."""
    if head is None:
        return []
    groups: list[tuple[str, list[CheckpointSnapshot]]] = []
    for snapshot in _lineage(checkpoint, head):
        mark = _mark_of(snapshot)
        if mark is None:
            continue
        if groups and groups[-1][0] == mark["id"]:
            groups[-1][1].append(snapshot)
        else:
            groups.append((mark["id"], [snapshot]))
    records, seen = [], 0
    for _turn_id, snapshots in groups:
        record, seen = _committed(checkpoint, snapshots, seen, workflow, True)
        records.append(record)
    return records


def _committed(checkpoint: Checkpoint, snapshots: list[CheckpointSnapshot], before: int | None,
               workflow: Workflow | None, on_lineage: bool) -> tuple[TurnRecord, int]:
    """The record of a committed turn's snapshots; ``before``: outputs before it (``None``:
    read from the first snapshot's parent)."""
    first, last = snapshots[0], snapshots[-1]
    mark = first.metadata["turn"]
    if before is None:
        parent = first.parent_snapshot_id
        before = 0 if parent is None else len(
            inspect_snapshot(checkpoint.get_snapshot(parent), workflow=workflow).outputs)
    view = inspect_snapshot(last, workflow=workflow)
    return TurnRecord(
        mark["id"], mark.get("key"), str(mark.get("protocol", "native")),
        dict(mark.get("data") or {}), "committed", view.status,
        first.snapshot_id, last.snapshot_id, view.outputs[before:], dict(view.pending_requests),
        on_lineage=on_lineage, checkpoint_id=checkpoint.checkpoint_id,
        started_at=first.timestamp, ended_at=last.timestamp,
    ), len(view.outputs)


def turn_snapshots(checkpoint: Checkpoint | None, turn_id: str) -> list[CheckpointSnapshot]:
    """The snapshots a turn committed, in the order it committed them."""
    if checkpoint is None:
        return []
    return [s for s in checkpoint.snapshots
            if (mark := _mark_of(s)) is not None and mark["id"] == turn_id]


def locate_turn(
    state: Mapping[str, Any], checkpoint: Checkpoint | None, good_head: str | None,
    workflow: Workflow | None, *, turn_id: str | None, key: str | None,
    lease: Any, lease_live: bool,
) -> TurnRecord | None:
    """A turn by id or idempotency key from what the stores hold (see ``Host.find_turn``).

    ``state`` is the conversation's session state, ``checkpoint`` its stored checkpoint
    (every snapshot, ``good_head`` the conversation's head), ``lease`` the session's lease
    record and ``lease_live`` whether it still holds the conversation.
    """
    def matches(mark: Any) -> bool:
        return isinstance(mark, dict) and bool(mark) and (
            (turn_id is not None and mark.get("id") == turn_id)
            or (key is not None and mark.get("key") == key))

    running: Any = lease.get("turn") if isinstance(lease, dict) else None
    if matches(running) and lease_live:
        return _running(running, checkpoint)
    found = None if checkpoint is None else _in_graph(checkpoint, good_head, workflow, matches)
    if found is not None and found.on_lineage:
        return found
    outcome = recorded_outcome(state, turn_id=turn_id, key=key)
    if outcome is not None:  # failed or cancelled: what it committed is not its outcome
        return outcome
    if matches(running):  # a dead owner's turn, not yet settled by a takeover
        return _dead(running, checkpoint)
    return found  # committed, on a line a branch left


def _in_graph(checkpoint: Checkpoint, good_head: str | None, workflow: Workflow | None,
              matches: Any) -> TurnRecord | None:
    """The matching committed turn: the one on the lineage, else the latest elsewhere."""
    groups: dict[str, list[CheckpointSnapshot]] = {}
    for snapshot in checkpoint.snapshots:
        mark = _mark_of(snapshot)
        if mark is not None and matches(mark):
            groups.setdefault(mark["id"], []).append(snapshot)
    if not groups:
        return None
    lineage = set() if good_head is None else {
        s.snapshot_id for s in _lineage(checkpoint, good_head)}
    on = [g for g in groups.values() if g[-1].snapshot_id in lineage]
    chosen = on[-1] if on else list(groups.values())[-1]
    if not on and good_head is not None and chosen[0].snapshot_id in lineage:
        chosen = [s for s in chosen if s.snapshot_id in lineage]  # cut short by a branch
    record, _ = _committed(checkpoint, chosen, None, workflow, bool(on))
    return record


def _running(mark: Mapping[str, Any], checkpoint: Checkpoint | None) -> TurnRecord:
    snapshots = turn_snapshots(checkpoint, str(mark.get("id")))
    return TurnRecord(
        str(mark.get("id")), mark.get("key"), str(mark.get("protocol", "native")),
        dict(mark.get("data") or {}), "running", RunStatus.RUNNING,
        snapshots[0].snapshot_id if snapshots else None,
        snapshots[-1].snapshot_id if snapshots else None,
        checkpoint_id=None if checkpoint is None else checkpoint.checkpoint_id,
        started_at=snapshots[0].timestamp if snapshots else None)


def _dead(mark: Mapping[str, Any], checkpoint: Checkpoint | None) -> TurnRecord:
    snapshots = turn_snapshots(checkpoint, str(mark.get("id")))
    return TurnRecord(
        str(mark.get("id")), mark.get("key"), str(mark.get("protocol", "native")),
        dict(mark.get("data") or {}), "failed", RunStatus.FAILED, error=DEAD_OWNER,
        on_lineage=False, checkpoint_id=None if checkpoint is None else checkpoint.checkpoint_id,
        started_at=snapshots[0].timestamp if snapshots else None)


def iso_time(at: float) -> str:
    """``at`` (epoch seconds) as snapshots write their timestamps (ISO 8601, UTC, ``Z``)."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def turns_from(checkpoint: Checkpoint, head: str, turn_id: str
                ) -> list[tuple[dict[str, Any], CheckpointSnapshot]]:
    """Each turn on ``head``'s lineage from ``turn_id`` on: its first snapshot's mark (with
    its data) and that snapshot; empty when ``turn_id`` is not on the lineage."""
    firsts: list[tuple[dict[str, Any], CheckpointSnapshot]] = []
    for snapshot in _lineage(checkpoint, head):
        mark = _mark_of(snapshot)
        if mark is None or (firsts and firsts[-1][0]["id"] == mark["id"]):
            continue
        if firsts or mark["id"] == turn_id:
            firsts.append((dict(mark), snapshot))
    return firsts


def answered_requests(checkpoint: Checkpoint, responses: Mapping[str, Any]) -> list[str]:
    """The ids among ``responses`` that the head's lineage shows answered already (an id
    never asked is left to the engine's own ``InvalidResponseError``)."""
    head = checkpoint.head_snapshot
    if head is None or not responses:
        return []
    missing = set(responses) - set(pending_request_ids(head))
    answered: list[str] = []
    snapshot = head
    while missing and snapshot.parent_snapshot_id is not None:
        snapshot = checkpoint.get_snapshot(snapshot.parent_snapshot_id)
        found = missing & set(pending_request_ids(snapshot))
        answered.extend(found)
        missing -= found
    return sorted(answered)


def record_outcome(state: dict[str, Any], turn: Mapping[str, Any], status: str,
                   error: str | None, at: float | None = None) -> None:
    """Append a turn that did not move the head to the session's outcomes (bounded)."""
    outcomes = [o for o in state.get(OUTCOMES_KEY, ()) if isinstance(o, dict)
                and o.get("id") != turn.get("id")]
    outcomes.append({**turn, "status": status, "error": error,
                     "at": time.time() if at is None else at})
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
            at = outcome.get("at")
            ended = iso_time(float(at)) if isinstance(at, (int, float)) else None
            return TurnRecord(
                str(outcome.get("id")), outcome.get("key"),
                str(outcome.get("protocol", "native")), dict(outcome.get("data") or {}),
                "cancelled" if cancelled else "failed",
                RunStatus.CANCELLED if cancelled else RunStatus.FAILED,
                error=outcome.get("error"), on_lineage=False, ended_at=ended)
    return None
