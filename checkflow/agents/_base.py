"""``BaseAgent``: the one implementation of ``run``'s shape, shared by every agent.

It normalizes input, supplies a one-shot session when none is given, dispatches between the
awaitable and the streaming form, and reads/writes the conversation history in
``session.state``. Subclasses implement the model side only. This module must never keep
per-conversation state on an agent object.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Final, Literal, overload

from checkflow.agents._messages import AgentInput, ChatMessage, normalize_messages
from checkflow.agents._types import AgentResponse, AgentResponseUpdate
from checkflow.sessions import AgentSession

__all__ = ["HISTORY_KEY", "BaseAgent", "append_history", "get_history"]

HISTORY_KEY: Final = "messages"
"""``session.state[HISTORY_KEY]`` is the conversation so far, a list of ``ChatMessage``s."""


def get_history(session: AgentSession) -> list[ChatMessage]:
    """The conversation recorded in ``session`` (a new list; the session is not changed)."""
    return list(session.state.get(HISTORY_KEY, ()))


def append_history(session: AgentSession, messages: Sequence[ChatMessage]) -> None:
    """Record ``messages`` after the history, replacing the list (never mutating a shared one)."""
    session.state[HISTORY_KEY] = [*get_history(session), *messages]


class BaseAgent(ABC):
    """Implements ``Agent.run``; subclasses implement ``_respond`` (and may stream natively).

    A run's new messages and the agent's reply are appended to the session's history only
    once the reply is complete, so a failed or abandoned run leaves the session unchanged.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        """The agent's name, used as the author of its messages."""
        return self._name

    def create_session(self, *, session_id: str | None = None) -> AgentSession:
        """A new, empty conversation for this agent."""
        return AgentSession(session_id)

    @overload
    def run(
        self,
        messages: AgentInput,
        *,
        session: AgentSession | None = None,
        stream: Literal[False] = False,
    ) -> Awaitable[AgentResponse]: ...

    @overload
    def run(
        self,
        messages: AgentInput,
        *,
        session: AgentSession | None = None,
        stream: Literal[True],
    ) -> AsyncIterator[AgentResponseUpdate]: ...

    def run(
        self,
        messages: AgentInput,
        *,
        session: AgentSession | None = None,
        stream: bool = False,
    ) -> Awaitable[AgentResponse] | AsyncIterator[AgentResponseUpdate]:
        """Answer ``messages`` in ``session`` (one-shot without one); see ``Agent``."""
        new_messages = normalize_messages(messages)
        if session is None:
            session = self.create_session()
        if stream:
            return self._stream(new_messages, session)
        return self._respond(new_messages, session)

    @abstractmethod
    async def _respond(self, messages: list[ChatMessage], session: AgentSession) -> AgentResponse:
        """Produce the whole reply and record the turn in the session."""

    async def _stream(
        self, messages: list[ChatMessage], session: AgentSession
    ) -> AsyncIterator[AgentResponseUpdate]:
        """Stream the reply; agents that cannot stream yield it whole, one update per message."""
        response = await self._respond(messages, session)
        for update in response.to_updates():
            yield update
