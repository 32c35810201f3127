"""Say the real cause of a conflict: what the storage's head is and who wrote it, when.

A storage reports a conflict by ids alone, and "another writer committed first" sends the
user the wrong way when there was no other writer: a program run twice that creates its
checkpoint under a fixed id meets its own earlier run. On a conflict (the error path only) the
checkpoint reads the stored head back and names it: when it was written, at which boundary,
whether before this checkpoint object existed, and how it relates to the head this object
expected. Creating over an existing id becomes ``CheckpointExistsError``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from checkflow.errors import CheckflowError, CheckpointConflictError, CheckpointExistsError

if TYPE_CHECKING:
    from checkflow.checkpoints._checkpoint import Checkpoint
    from checkflow.checkpoints._protocol import CheckpointStorage
    from checkflow.checkpoints._snapshot import CheckpointSnapshot

__all__ = ["explain_conflict"]


async def explain_conflict(
    storage: CheckpointStorage, conflict: CheckpointConflictError, *, created_at: datetime
) -> CheckpointConflictError:
    """The conflict to raise instead of ``conflict``, naming what the storage holds.

    ``created_at`` is when the committing ``Checkpoint`` object was made: a stored head older
    than it was written by an earlier run, not by a writer racing this one.
    """
    cid, expected = conflict.checkpoint_id, conflict.expected_head_snapshot_id
    actual = conflict.actual_head_snapshot_id
    stored = await _stored(storage, cid)
    head = _snapshot(stored, actual)
    if expected is None and actual is not None:
        return CheckpointExistsError(
            cid, actual_head_snapshot_id=actual,
            written=None if head is None else _written(head, created_at))
    if actual is None:
        cause = ("the checkpoint is no longer in this storage (deleted since this object "
                 "last saw it); create a new one, or commit nothing more to this one")
    elif head is None:
        cause = "another writer committed first (refresh() and retry)"
    else:
        cause = (f"that head was {_written(head, created_at)}, "
                 f"{_relation(stored, head, expected)}; refresh() to see it, then retry")
    return CheckpointConflictError(cid, expected_head_snapshot_id=expected,
                                   actual_head_snapshot_id=actual, cause=cause)


async def _stored(storage: CheckpointStorage, checkpoint_id: str) -> Checkpoint | None:
    try:
        return await storage.load(checkpoint_id)
    except CheckflowError:  # the explanation is best effort: the conflict stands without it
        return None


def _snapshot(stored: Checkpoint | None, snapshot_id: str | None) -> CheckpointSnapshot | None:
    if stored is None or snapshot_id is None:
        return None
    try:
        return stored.get_snapshot(snapshot_id)
    except CheckflowError:  # the head moved on again (or was pruned) since the conflict
        return None


def _written(head: CheckpointSnapshot, created_at: datetime) -> str:
    """``written at T (boundary, superstep N, status S) by an earlier run ...``."""
    meta = head.metadata
    facts = [str(meta[k]) if k == "boundary" else f"{k} {meta[k]}"
             for k in ("boundary", "superstep", "status") if k in meta]
    turn = meta.get("turn")
    if isinstance(turn, dict) and turn.get("protocol"):
        facts.append(f"a hosted turn over {turn['protocol']}")
    when = f"written at {head.timestamp}" + (f" ({', '.join(facts)})" if facts else "")
    if _before(head.timestamp, created_at):
        return (f"{when} by an earlier run of this checkpoint id, before this checkpoint "
                "object was created (this program run before, or the id loaded elsewhere?)")
    return f"{when} by another writer while this object was in use"


def _relation(stored: Checkpoint | None, head: CheckpointSnapshot, expected: str | None) -> str:
    if stored is None or expected is None:
        return "on a lineage this object has not seen"
    lineage = [s.snapshot_id for s in stored.ancestors(head.snapshot_id)]
    if expected in lineage:
        n = lineage.index(expected)
        return f"{n} commit{'s' if n != 1 else ''} past the head this object last saw"
    return "on another branch than the head this object last saw"


def _before(timestamp: str, moment: datetime) -> bool:
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")) < moment
    except ValueError:
        return False
