"""``AgentHost``: serve one plain ``Agent`` to many conversations with the workflow host's rules.

Each conversation (scoped by principal) gets an ``AgentSession`` kept inside the host's
conversation session at ``state["agent_session"]``; runs on one conversation never overlap
(busy set and session lease, as for workflows); the agent runs on a private copy of its session,
stored only after the run succeeded, so a failed or abandoned run changes nothing (the lease
still writes the conversation session when it ends). This module must never queue a request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Literal, overload

from checkflow.agents import Agent, AgentInput, AgentResponse, AgentResponseUpdate
from checkflow.errors import ConversationNotFoundError
from checkflow.hosting._keys import ConversationKey
from checkflow.hosting._lease import ConversationLease, LeaseManager, new_owner_id
from checkflow.hosting._target import Resolver
from checkflow.sessions import AgentSession, InMemorySessionStore, SessionStore
from checkflow.state import from_builtins, to_builtins

__all__ = ["AgentHost"]

AGENT_SESSION_KEY = "agent_session"


class AgentHost:
    """Runs one agent for many conversations, one ``AgentSession`` per (principal, conversation).

    ``agent`` is an ``Agent`` or a zero-argument factory (sync or async) of one, resolved once.
    """

    def __init__(
        self, agent: Any, *, session_store: SessionStore | None = None, lease_seconds: float = 300.0
    ) -> None:
        self.session_store: SessionStore = session_store or InMemorySessionStore()
        self._agent: Resolver[Agent] = Resolver(
            agent, is_instance=lambda a: isinstance(a, Agent), what="Agent"
        )
        self._leases = LeaseManager(
            self.session_store, owner=new_owner_id(), lease_seconds=lease_seconds
        )

    async def agent(self) -> Agent:
        """The hosted agent, built on first use when the host was given a factory."""
        return await self._agent.get()

    @overload
    async def run(
        self, conversation_id: str, messages: AgentInput, *, principal: str | None = None,
        stream: Literal[False] = False,
    ) -> AgentResponse: ...

    @overload
    async def run(
        self, conversation_id: str, messages: AgentInput, *, principal: str | None = None,
        stream: Literal[True],
    ) -> AsyncIterator[AgentResponseUpdate]: ...

    async def run(
        self,
        conversation_id: str,
        messages: AgentInput,
        *,
        principal: str | None = None,
        stream: bool = False,
    ) -> AgentResponse | AsyncIterator[AgentResponseUpdate]:
        """One agent turn: an ``AgentResponse``, or an async iterator of updates when streaming.

        Raises ``ConversationBusyError`` at once if the conversation is running anywhere.
        """
        agent = await self.agent()
        key = ConversationKey(principal, conversation_id)
        lease = await self._leases.acquire(key)
        try:
            session = _agent_session(lease, agent, key)
            if stream:
                return self._stream(lease, session, agent.run(messages, session=session,
                                                              stream=True))
            response: AgentResponse = await agent.run(messages, session=session)
        except BaseException:
            await asyncio.shield(lease.release())
            raise
        await asyncio.shield(lease.release(_store(session)))
        return response

    async def _stream(
        self, lease: ConversationLease, session: AgentSession,
        updates: AsyncIterator[AgentResponseUpdate],
    ) -> AsyncIterator[AgentResponseUpdate]:
        completed = False
        try:
            async for update in updates:
                yield update
            completed = True
        finally:
            await asyncio.shield(lease.release(_store(session) if completed else None))

    async def get_session(
        self, conversation_id: str, *, principal: str | None = None
    ) -> AgentSession:
        """The conversation's agent session; ``ConversationNotFoundError`` if it has none."""
        key = ConversationKey(principal, conversation_id)
        stored = await self.session_store.get(key.session_id)
        session = None if stored is None else stored.state.get(AGENT_SESSION_KEY)
        if not isinstance(session, AgentSession):
            raise ConversationNotFoundError(conversation_id)
        return session

    async def delete_conversation(
        self, conversation_id: str, *, principal: str | None = None
    ) -> None:
        """Forget the conversation's agent session (``ConversationNotFoundError`` if none)."""
        key = ConversationKey(principal, conversation_id)
        lease = await self._leases.acquire(key, create=False)
        existed = isinstance(lease.session.state.get(AGENT_SESSION_KEY), AgentSession)
        await asyncio.shield(lease.release(lambda state: state.pop(AGENT_SESSION_KEY, None)))
        if not existed:
            raise ConversationNotFoundError(conversation_id)

    async def check_ready(self) -> None:
        """Raise if the session store cannot be reached."""
        await self.session_store.get("checkflow-readiness-probe")


def _agent_session(lease: ConversationLease, agent: Agent, key: ConversationKey) -> AgentSession:
    """A copy of the stored agent session (or a new one) for the agent to change freely.

    The stored one sits inside the leased conversation session, which the lease writes back
    whatever the outcome; the copy reaches it only through ``_store`` after a good run.
    """
    stored = lease.session.state.get(AGENT_SESSION_KEY)
    if isinstance(stored, AgentSession):
        copy: AgentSession = from_builtins(to_builtins(stored))
        return copy
    return agent.create_session(session_id=key.session_id)


def _store(session: AgentSession) -> Any:
    def update(state: dict[str, Any]) -> None:
        state[AGENT_SESSION_KEY] = session

    return update
