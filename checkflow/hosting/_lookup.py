"""From a checkpoint id back to the hosted conversation it belongs to, for tools.

A host names each conversation's checkpoints after the conversation's session
(``<session id>-g<generation>``), so a tool holding only a checkpoint id and the session
store can find the conversation and its head: the conversation's head (the session's
reference, its last good turn) is the truth, and storage's own head may be ahead of it after
a failed turn. This module must never write anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from checkflow.agents import CHECKPOINT_KEY
from checkflow.checkpoints import CheckpointReference
from checkflow.hosting._keys import CONVERSATION_KEY, ConversationKey
from checkflow.sessions import SessionStore

__all__ = ["ConversationHead", "conversation_head"]


@dataclass(frozen=True, slots=True)
class ConversationHead:
    """The hosted conversation a checkpoint belongs to, and the head the conversation is at."""

    conversation_id: str
    principal: str | None
    head_snapshot_id: str


async def conversation_head(
    session_store: SessionStore, checkpoint_id: str
) -> ConversationHead | None:
    """The conversation whose current checkpoint is ``checkpoint_id``, or ``None``.

    ``None`` for a checkpoint no host made, or one its conversation no longer references
    (deleted, or an older generation).
    """
    session_id = ConversationKey.session_id_of_checkpoint(checkpoint_id)
    session = None if session_id is None else await session_store.get(session_id)
    if session is None:
        return None
    ref = session.state.get(CHECKPOINT_KEY)
    identity = session.state.get(CONVERSATION_KEY)
    if (not isinstance(ref, CheckpointReference) or ref.checkpoint_id != checkpoint_id
            or ref.head_snapshot_id is None or not isinstance(identity, dict)):
        return None
    return ConversationHead(str(identity.get("conversation_id")), identity.get("principal"),
                            ref.head_snapshot_id)
