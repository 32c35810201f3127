"""Conversation identity: which session and which checkpoint id a (principal, conversation) gets.

Conversation ids and principals are opaque strings chosen by clients and by the app; any
string is safe. The session id and the checkpoint ids are derived from a hash of the pair, so
equal conversation ids of two principals never meet, and a generation number makes a deleted
and re-created conversation (or one restarted after a graph change) use a fresh checkpoint id.
This module must never do I/O.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import msgspec

__all__ = ["ConversationKey"]


@dataclass(frozen=True, slots=True)
class ConversationKey:
    """One principal's conversation; ``principal`` is ``None`` when the app has no auth."""

    principal: str | None
    conversation_id: str

    @property
    def digest(self) -> str:
        """An unambiguous, fixed-size name for the pair (JSON-encoded first, then hashed)."""
        pair = msgspec.json.encode([self.principal, self.conversation_id])
        return hashlib.blake2b(pair, digest_size=16).hexdigest()

    @property
    def session_id(self) -> str:
        """The id of the conversation's ``AgentSession`` in the host's session store."""
        return f"conversation-{self.digest}"

    def checkpoint_id(self, generation: int) -> str:
        """The checkpoint id of this conversation's ``generation``-th checkpoint."""
        return f"conversation-{self.digest}-g{generation}"

    def describe(self) -> dict[str, str | None]:
        """The readable identity stored inside the session (ids alone are hashes)."""
        return {"principal": self.principal, "conversation_id": self.conversation_id}
