"""Following a turn from a process that does not run it: the committed snapshots are its log.

The owner's live events (per executor, token deltas) exist only in the owner's memory; what
every process can read is what the turn committed. So a follower elsewhere polls the turn's
record and the stored checkpoint, announces each snapshot the turn committed as it lands,
and when the turn is over (committed, failed, cancelled, or its owner died) its outcome,
then ends. A follower never waits on a dead owner: the turn's record says ``failed`` as
soon as its lease has expired or its process is gone. This module must never write.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from checkflow.hosting._turns import outcome_events

if TYPE_CHECKING:
    from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
    from checkflow.hosting._host_base import HostBase
    from checkflow.hosting._keys import ConversationKey
    from checkflow.workflows import WorkflowEvent

__all__ = ["follow_turn"]


async def follow_turn(host: HostBase, key: ConversationKey, turn_id: str | None,
                      after: int | None, poll_seconds: float) -> AsyncIterator[WorkflowEvent]:
    """The turn's events as another process sees them, numbered from 1, after ``after``."""
    if turn_id is None:
        turn_id = await host._running_turn_id(key)
        if turn_id is None:
            return
    seen: set[str] = set()
    number = 0
    while True:
        record, checkpoint = await host._locate(key, turn_id, None)
        if record is None:
            return
        fresh = _new_snapshots(checkpoint, turn_id, seen)
        events = outcome_events(record, fresh, number)
        number += len(events)
        for event in events:
            if after is None or event.sequence > after:
                yield event
        if record.state != "running":
            return
        await asyncio.sleep(poll_seconds)


def _new_snapshots(checkpoint: Checkpoint | None, turn_id: str, seen: set[str]
                   ) -> list[CheckpointSnapshot]:
    """The turn's snapshots not announced yet, in the order they were committed."""
    fresh = []
    for snapshot in () if checkpoint is None else checkpoint.snapshots:
        mark = snapshot.metadata.get("turn")
        if (isinstance(mark, dict) and mark.get("id") == turn_id
                and snapshot.snapshot_id not in seen):
            seen.add(snapshot.snapshot_id)
            fresh.append(snapshot)
    return fresh
