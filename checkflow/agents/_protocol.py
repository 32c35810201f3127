"""The ``Agent`` protocol: what workflows, hosts and adapters may assume about any agent.

Only the protocol lives here. This module must never implement an agent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import Literal, Protocol, overload, runtime_checkable

from checkflow.agents._messages import AgentInput
from checkflow.agents._types import AgentResponse, AgentResponseUpdate
from checkflow.sessions import AgentSession

__all__ = ["Agent"]


@runtime_checkable
class Agent(Protocol):
    """Something that answers messages, keeping each conversation's state in its session.

    ``run(messages)`` returns an awaitable ``AgentResponse``; ``run(messages, stream=True)``
    returns an async iterator of ``AgentResponseUpdate``s. Without a session the run is
    one-shot. An agent never keeps per-conversation state on itself, so one agent object
    serves any number of concurrent sessions.
    """

    @property
    def name(self) -> str:
        """The agent's name: the author of its responses and its id in a graph signature."""
        ...

    def create_session(self, *, session_id: str | None = None) -> AgentSession:
        """A new, empty session for one conversation (``session_id`` generated when omitted)."""
        ...

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
        """Answer ``messages``, continuing ``session``'s conversation (one-shot without one)."""
        ...
