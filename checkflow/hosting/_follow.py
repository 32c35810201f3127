"""Following a turn from a process that does not run it: the committed snapshots are its log.

The owner's live events (per executor, token deltas) exist only in the owner's memory; what
every process can read is what the turn committed. So a follower elsewhere polls the turn's
record and the stored checkpoint, announces each snapshot the turn committed as it lands
(with the outputs and requests that snapshot added), and when the turn is over (committed,
failed, cancelled, or its owner died) its outcome, then ends. A follower never waits on a
dead owner: the turn's record says ``failed`` as soon as its lease has expired or its process
is gone. This module must never write.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

from checkflow.hosting._turns import TurnRecord, turn_snapshots
from checkflow.workflows import (
    OutputEvent,
    RequestInfoEvent,
    SnapshotCommittedEvent,
    WorkflowEvent,
    WorkflowStatusEvent,
    inspect_snapshot,
)

if TYPE_CHECKING:
    from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
    from checkflow.hosting._keys import ConversationKey
    from checkflow.workflows import Workflow

__all__ = ["Followable", "follow_turn", "outcome_events"]


class Followable(Protocol):
    """What a follower reads of a host: the running turn, a turn's record and snapshots."""

    async def _running_turn_id(self, key: ConversationKey) -> str | None: ...
    async def _locate(self, key: ConversationKey, turn_id: str | None,
                      idempotency_key: str | None) -> tuple[TurnRecord | None,
                                                            Checkpoint | None]: ...
    async def _inspector(self) -> Workflow | None: ...


def outcome_events(record: TurnRecord, *, outputs_seen: int = 0,
                   requests_seen: frozenset[str] = frozenset()) -> list[WorkflowEvent]:
    """The events that tell a follower (or a replay) a finished turn's outcome: its outputs
    and pending requests not told yet, then its status."""
    events: list[WorkflowEvent] = [OutputEvent("", output)
                                   for output in list(record.outputs)[outputs_seen:]]
    events.extend(RequestInfoEvent(request) for rid, request in
                  record.pending_requests.items() if rid not in requests_seen)
    events.append(WorkflowStatusEvent(record.status))
    return events


class _Progress:
    """What a follower has told so far of one turn, numbering its events from 1."""

    def __init__(self, turn_id: str, workflow: Workflow | None, after: int | None) -> None:
        self.turn_id = turn_id
        self.workflow = workflow
        self.after = after
        self.number = 0
        self.snapshots: set[str] = set()
        self.outputs = 0
        self.requests: set[str] = set()
        self.base: int | None = None  # outputs before the turn, read from its first parent

    def news(self, checkpoint: Checkpoint | None) -> list[WorkflowEvent]:
        """Each snapshot of the turn not announced yet, with what it added."""
        events: list[WorkflowEvent] = []
        for snapshot in turn_snapshots(checkpoint, self.turn_id):
            if snapshot.snapshot_id in self.snapshots:
                continue
            self.snapshots.add(snapshot.snapshot_id)
            events.append(_committed(snapshot))
            assert checkpoint is not None
            events.extend(self._added(checkpoint, snapshot))
        return events

    def _added(self, checkpoint: Checkpoint, snapshot: CheckpointSnapshot
               ) -> list[WorkflowEvent]:
        if self.base is None:
            parent = snapshot.parent_snapshot_id
            self.base = 0 if parent is None else len(inspect_snapshot(
                checkpoint.get_snapshot(parent), workflow=self.workflow).outputs)
        view = inspect_snapshot(snapshot, workflow=self.workflow)
        fresh = view.outputs[self.base + self.outputs:]
        self.outputs += len(fresh)
        events: list[WorkflowEvent] = [OutputEvent("", output) for output in fresh]
        for rid, request in view.pending_requests.items():
            if rid not in self.requests:
                self.requests.add(rid)
                events.append(RequestInfoEvent(request))
        return events

    def numbered(self, events: list[WorkflowEvent]) -> list[WorkflowEvent]:
        told = []
        for event in events:
            self.number += 1
            event.sequence = self.number
            if self.after is None or event.sequence > self.after:
                told.append(event)
        return told


def _committed(snapshot: CheckpointSnapshot) -> SnapshotCommittedEvent:
    metadata = snapshot.metadata
    return SnapshotCommittedEvent(snapshot.snapshot_id, snapshot.parent_snapshot_id,
                                  str(metadata.get("boundary", "")),
                                  int(metadata.get("superstep", 0)), _snapshot=snapshot)


async def follow_turn(host: Followable, key: ConversationKey, turn_id: str | None,
                      after: int | None, poll_seconds: float) -> AsyncIterator[WorkflowEvent]:
    """The turn's events as another process sees them, numbered from 1, after ``after``."""
    if turn_id is None:
        turn_id = await host._running_turn_id(key)
        if turn_id is None:
            return
    progress = _Progress(turn_id, await host._inspector(), after)
    while True:
        record, checkpoint = await host._locate(key, turn_id, None)
        if record is None:
            return
        events = progress.news(checkpoint)
        if record.state != "running":
            events.extend(outcome_events(record, outputs_seen=progress.outputs,
                                         requests_seen=frozenset(progress.requests)))
        for event in progress.numbered(events):
            yield event
        if record.state != "running":
            return
        await asyncio.sleep(poll_seconds)


async def replay(events: list[WorkflowEvent]) -> AsyncIterator[WorkflowEvent]:
    """``events`` as a stream, numbered from 1 (a replayed turn's)."""
    for number, event in enumerate(events, 1):
        event.sequence = number
        yield event
