"""``AgentSession``: the caller-owned state of one agent conversation.

A session is a plain holder (an id and a ``state`` dict) registered with the one state codec,
so it can be stored in a ``SessionStore`` or nested in snapshot state. This module must never
do I/O or know which agent uses the session.
"""

from __future__ import annotations

import uuid
from typing import Any

from checkflow.state import register_state_type

__all__ = ["AgentSession"]


class AgentSession:
    """The state of one conversation; agents read and write ``state``, never themselves.

    ``state`` is a live dict whose values must be encodable by the state codec (registered
    types, builtins). ``version`` is runtime-only: the store version this object was last read
    as or written as, to pass back as ``expected_version``; it is never encoded.
    """

    __slots__ = ("session_id", "state", "version")

    def __init__(self, session_id: str | None = None, state: dict[str, Any] | None = None) -> None:
        self.session_id: str = session_id if session_id is not None else uuid.uuid4().hex
        self.state: dict[str, Any] = state if state is not None else {}
        self.version: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentSession):
            return NotImplemented
        return self.session_id == other.session_id and self.state == other.state

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"AgentSession(session_id={self.session_id!r}, state={self.state!r})"


def _encode_session(session: AgentSession) -> dict[str, Any]:
    return {"session_id": session.session_id, "state": session.state}


def _decode_session(value: dict[str, Any]) -> AgentSession:
    return AgentSession(value["session_id"], value["state"])


register_state_type(
    AgentSession,
    type_id="checkflow.AgentSession",
    encoder=_encode_session,
    decoder=_decode_session,
)
