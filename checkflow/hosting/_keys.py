"""Conversation identity: which session and which checkpoint id a (principal, conversation) gets.

Conversation ids and principals are opaque strings chosen by clients and by the app; any
string is safe. The session id and the checkpoint ids are derived from a hash of the pair, so
equal conversation ids of two principals never meet, and a generation number makes a deleted
and re-created conversation (or one restarted after a graph change) use a fresh checkpoint id.
This module must never do I/O.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Final

import msgspec

from checkflow.errors import InvalidConversationIdError

__all__ = [
    "AGENT_SESSION_KEY",
    "CONVERSATION_KEY",
    "GENERATION_KEY",
    "MAX_CONVERSATION_ID_LENGTH",
    "ConversationKey",
    "current_conversation_id",
    "running_conversation",
]

CONVERSATION_KEY: Final = "conversation"
"""``state[CONVERSATION_KEY]``: the readable ``{"principal", "conversation_id"}`` of a session."""
GENERATION_KEY: Final = "generation"
"""``state[GENERATION_KEY]``: how many checkpoints the conversation has started afresh."""
AGENT_SESSION_KEY: Final = "agent_session"
"""``state[AGENT_SESSION_KEY]``: an ``AgentHost`` conversation's own ``AgentSession``."""
_SESSION_PREFIX: Final = "conversation-"
MAX_CONVERSATION_ID_LENGTH: Final = 512
"""The longest conversation id (in characters) a host accepts."""
running_conversation: ContextVar[str | None] = ContextVar(
    "checkflow_running_conversation", default=None)
"""Set by ``WorkflowHost.run`` in the calling context, so the run it starts sees it."""


def current_conversation_id() -> str | None:
    """The conversation a host run in this context belongs to (``None`` outside one).

    Interceptors (telemetry) read it: ``RunInfo`` names only the checkpoint.
    """
    return running_conversation.get()


@dataclass(frozen=True, slots=True)
class ConversationKey:
    """One principal's conversation; ``principal`` is ``None`` when the app has no auth."""

    principal: str | None
    conversation_id: str
    session_id: str = field(init=False, repr=False, compare=False)
    """The id of the conversation's ``AgentSession`` in the host's session store."""

    def __post_init__(self) -> None:
        cid = self.conversation_id
        if not cid:
            raise InvalidConversationIdError("it is empty")
        if len(cid) > MAX_CONVERSATION_ID_LENGTH:
            raise InvalidConversationIdError(
                f"it has {len(cid)} characters; the limit is {MAX_CONVERSATION_ID_LENGTH}",
                too_long=True)
        object.__setattr__(self, "session_id", f"{_SESSION_PREFIX}{self.digest}")  # once

    @property
    def digest(self) -> str:
        """An unambiguous, fixed-size name for the pair (JSON-encoded first, then hashed)."""
        pair = msgspec.json.encode([self.principal, self.conversation_id])
        return hashlib.blake2b(pair, digest_size=16).hexdigest()

    @staticmethod
    def is_session_id(session_id: str) -> bool:
        """Whether ``session_id`` names a conversation's session (not a record's)."""
        return session_id.startswith(_SESSION_PREFIX) and len(session_id) == len(
            _SESSION_PREFIX) + 32

    @staticmethod
    def session_id_of_checkpoint(checkpoint_id: str) -> str | None:
        """The session of the conversation a host checkpoint id belongs to, if it is one."""
        stem, sep, generation = checkpoint_id.rpartition("-g")
        if not sep or not generation.isdigit() or not ConversationKey.is_session_id(stem):
            return None
        return stem

    def checkpoint_id(self, generation: int) -> str:
        """The checkpoint id of this conversation's ``generation``-th checkpoint."""
        return f"{self.session_id}-g{generation}"

    def describe(self) -> dict[str, str | None]:
        """The readable identity stored inside the session (ids alone are hashes)."""
        return {"principal": self.principal, "conversation_id": self.conversation_id}
