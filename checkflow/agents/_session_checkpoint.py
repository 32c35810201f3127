"""A session holds a checkpoint: the one implementation ``WorkflowAgent`` and the hosts share.

``session.state[CHECKPOINT_KEY]`` is the conversation's checkpoint: the unattached
``Checkpoint`` itself (encoded whole), or, when it lives in a storage, a
``CheckpointReference`` whose ``head_snapshot_id`` is the last good turn. The codec is
synchronous and knows no storage, so a reader swaps the reference for ``await storage.load()``
and continues from the reference's head (storage's own head may be ahead of it after a failed
turn). This module must never run a workflow or write a session itself.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

from checkflow.checkpoints import Checkpoint, CheckpointReference, CheckpointStorage
from checkflow.errors import (
    AgentError,
    CheckpointLostError,
    CheckpointNotFoundError,
    SnapshotNotFoundError,
)

__all__ = [
    "CHECKPOINT_KEY",
    "SessionCheckpoint",
    "load_session_checkpoint",
    "store_session_checkpoint",
]

CHECKPOINT_KEY: Final = "checkpoint"
"""``session.state[CHECKPOINT_KEY]`` is the conversation's workflow checkpoint (or reference)."""


@dataclass(slots=True)
class SessionCheckpoint:
    """The checkpoint a session holds, positioned at its last good head (``good_head``)."""

    checkpoint: Checkpoint
    good_head: str | None


async def load_session_checkpoint(
    state: Mapping[str, Any], storage: CheckpointStorage | None, *, owner: str,
    loaded: Checkpoint | None = None,
) -> SessionCheckpoint | None:
    """The session's checkpoint at its last good head, or ``None`` when there is none to resume.

    ``None`` also when the checkpoint was deleted, or its good head pruned away on purpose
    (``prune`` records what it removes): the conversation then starts afresh. When the
    checkpoint is there but lacks the head the session acknowledged and no prune removed it
    (a log cut short, an item lost), ``CheckpointLostError`` names the checkpoint, the
    expected head and what storage has, instead of quietly starting over: the caller
    decides (a host's ``recover``). A reference without a ``storage`` to load it from,
    or a value that is neither a checkpoint nor a reference, raises ``AgentError`` naming
    ``owner`` (the session or conversation, for the message). ``loaded`` is the referenced
    checkpoint when the caller has just loaded it (used instead of a second load when its
    id is the reference's).
    """
    held = state.get(CHECKPOINT_KEY)
    if held is None:
        return None
    if isinstance(held, Checkpoint):
        return SessionCheckpoint(held, held.head_snapshot_id)
    if not isinstance(held, CheckpointReference):
        raise AgentError(
            f"{owner}: state[{CHECKPOINT_KEY!r}] holds a {type(held).__name__}, "
            "not a Checkpoint or CheckpointReference")
    if storage is None:
        raise AgentError(
            f"{owner} references checkpoint {held.checkpoint_id!r} in a storage, but no "
            "checkpoint_storage was given to load it from")
    head = held.head_snapshot_id
    try:
        checkpoint = loaded if loaded is not None and (
            loaded.checkpoint_id == held.checkpoint_id) else await storage.load(
            held.checkpoint_id)
    except CheckpointNotFoundError:
        return None  # deleted as a whole (a deliberate act): the conversation starts afresh
    if head is not None and head != checkpoint.head_snapshot_id:
        try:
            checkpoint.restart_from(head)  # continue from the session's last good turn
        except SnapshotNotFoundError:
            if head in checkpoint.pruned_snapshot_ids:
                return None  # pruned on purpose: nothing to resume from, start afresh
            raise CheckpointLostError(
                held.checkpoint_id, expected_head_snapshot_id=head,
                actual_head_snapshot_id=checkpoint.persisted_head_snapshot_id, source=owner,
            ) from None
    return SessionCheckpoint(checkpoint, head)


def store_session_checkpoint(
    state: MutableMapping[str, Any], checkpoint: Checkpoint, good_head: str | None
) -> None:
    """Record ``checkpoint`` (at ``good_head``) in a session's state; ``None`` forgets it.

    An attached checkpoint is stored as a reference to ``good_head``; an unattached one
    whole (its own head must then be the good one).
    """
    if good_head is None:
        state.pop(CHECKPOINT_KEY, None)
    elif checkpoint.checkpoint_storage is None:
        state[CHECKPOINT_KEY] = checkpoint
    else:
        state[CHECKPOINT_KEY] = CheckpointReference(checkpoint.checkpoint_id, good_head)
