"""``AgentHost``: serve one plain ``Agent`` to many conversations with the workflow host's rules.

Each conversation (scoped by principal) gets an ``AgentSession`` kept inside the host's
conversation session at ``state["agent_session"]``; runs on one conversation never overlap
(busy set and session lease, as for workflows); the agent runs on a private copy of its session,
stored only after the run succeeded, so a failed or abandoned run changes nothing (the lease
still writes the conversation session when it ends). Besides the agent-shaped
``run(conversation_id, messages)`` it answers the ``Host`` protocol's
``run(conversation_id, message=...)``, streaming the agent's updates as
``AgentRunUpdateEvent``s and its reply as one ``OutputEvent``. This module must never queue
a request.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Unpack, overload

from checkflow._random import random_hex
from checkflow.agents import (
    Agent,
    AgentInput,
    AgentResponse,
    AgentResponseUpdate,
    AgentRunUpdateEvent,
    ChatMessage,
)
from checkflow.checkpoints import Checkpoint
from checkflow.errors import (
    ConversationNotFoundError,
    InvalidResponseError,
    NoCheckpointsError,
    SharedStateWriteError,
    TurnInProgressError,
)
from checkflow.hosting._agent_turn import AgentEngine
from checkflow.hosting._host_base import HostBase
from checkflow.hosting._keys import AGENT_SESSION_KEY, ConversationKey
from checkflow.hosting._lease import LEASE_KEY, ConversationLease, lease_is_live
from checkflow.hosting._protocol import HostDescription, RunOptions
from checkflow.hosting._records import DEFAULT_MAX_RECORD_BYTES
from checkflow.hosting._results import ConversationState, HostedRunResult, ResumeToken
from checkflow.hosting._target import Resolver
from checkflow.hosting._turn import ReplayedTurn, Turn
from checkflow.hosting._turns import (
    TurnOrigin,
    TurnRecord,
    locate_turn,
    record_outcome,
    recorded_outcome,
    turn_mark,
)
from checkflow.sessions import AgentSession, SessionStore
from checkflow.state import from_builtins, to_builtins
from checkflow.workflows import RunStatus

__all__ = ["AgentHost", "AgentRunStream"]


class AgentHost(HostBase):
    """Runs one agent for many conversations, one ``AgentSession`` per (principal, conversation).

    ``agent`` is an ``Agent`` or a zero-argument factory (sync or async) of one, resolved once.
    """

    def __init__(
        self, agent: Any, *, session_store: SessionStore | None = None,
        lease_seconds: float = 300.0, renew_seconds: float | None = None,
        max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
        cancel_poll_seconds: float = 1.0,
    ) -> None:
        super().__init__(session_store, lease_seconds=lease_seconds, renew_seconds=renew_seconds,
                         cancel_poll_seconds=cancel_poll_seconds)
        self.max_record_bytes = max_record_bytes
        self._agent: Resolver[Agent] = Resolver(
            agent, is_instance=lambda a: isinstance(a, Agent), what="Agent"
        )

    async def agent(self) -> Agent:
        """The hosted agent, built on first use when the host was given a factory."""
        return await self._agent.get()

    async def describe(self) -> HostDescription:
        """The agent's name; it takes chat messages."""
        agent = await self.agent()
        name = getattr(agent, "name", None) or type(agent).__name__
        doc = (type(agent).__doc__ or "").strip().split("\n\n")[0]
        return HostDescription(name=str(name), description=" ".join(doc.split()) or str(name),
                               input_types=(list[ChatMessage],), chat_input=True,
                               checkpoints=False)

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

    @overload
    async def run(
        self, conversation_id: str, messages: None = None, *, stream: Literal[False] = False,
        **options: Unpack[RunOptions],
    ) -> HostedRunResult: ...

    @overload
    async def run(
        self, conversation_id: str, messages: None = None, *, stream: Literal[True],
        **options: Unpack[RunOptions],
    ) -> Turn | ReplayedTurn: ...

    async def run(
        self,
        conversation_id: str,
        messages: AgentInput | None = None,
        *,
        message: Any = None,
        responses: Mapping[str, Any] | None = None,
        principal: str | None = None,
        from_snapshot: str | None = None,
        resume_token: ResumeToken | None = None,
        idempotency_key: str | None = None,
        origin: TurnOrigin | None = None,
        shared_state: Mapping[str, Any] | None = None,
        stream: bool = False,
    ) -> Any:
        """One agent turn.

        Agent-shaped, ``run(conversation_id, messages)``: an ``AgentResponse``, or an async
        iterator of updates when streaming. ``Host``-shaped, ``run(conversation_id,
        message=...)``: a ``HostedRunResult`` whose one output is the ``AgentResponse``, or
        an ``AgentRunStream`` of events. An agent has no pending requests and no snapshots:
        ``responses`` raise ``InvalidResponseError``, ``from_snapshot``/``resume_token``
        ``NoCheckpointsError``, ``shared_state`` ``SharedStateWriteError`` (an agent keeps
        no shared state). Raises ``ConversationBusyError`` at once if the conversation
        is running anywhere. Each turn is recorded in the conversation's session with the
        agent session it produced (one write), so ``idempotency_key`` works as on a
        ``WorkflowHost``: a retry of a recorded turn replays its reply, of a running one
        raises ``TurnInProgressError``.
        """
        if responses:
            raise InvalidResponseError(
                f"conversation {conversation_id!r} is served by an agent, which has no pending "
                "requests to answer", request_id=next(iter(responses)))
        if from_snapshot is not None or resume_token is not None:
            raise NoCheckpointsError(conversation_id)
        if shared_state:
            raise SharedStateWriteError(next(iter(shared_state)),
                                        "an agent keeps no shared state")
        legacy = messages is not None
        turn_input = messages if legacy else message
        if turn_input is None:
            raise ValueError(f"conversation {conversation_id!r}: send a message")
        agent = await self.agent()
        key = ConversationKey(principal, conversation_id)
        if idempotency_key is not None:
            active = self._runs.get(key)
            if active is not None and active.idempotency_key == idempotency_key:
                raise TurnInProgressError(conversation_id, active.run_id,
                                          idempotency_key=idempotency_key)
        mark, _ = turn_mark(random_hex(), idempotency_key, origin or TurnOrigin())
        if origin is not None and origin.data:
            mark["data"] = dict(origin.data)
        lease = await self._leases.acquire(key, turn=mark)
        try:
            if idempotency_key is not None and not legacy:
                recorded = _recorded(lease.session.state, idempotency_key=idempotency_key)
                if recorded is not None:
                    await lease.release()  # nothing runs, nothing changes
                    result = HostedRunResult(conversation_id, recorded.status,
                                             outputs=list(recorded.outputs), turn=recorded,
                                             replayed=True)
                    return ReplayedTurn(result, recorded) if stream else result
            session = _agent_session(lease, agent, key)
            if stream:
                claim = AgentClaim(key, lease, mark["id"], idempotency_key, mark, session)
                engine = AgentEngine(agent.run(turn_input, session=session, stream=True),
                                     str(getattr(agent, "name", "agent")))
                turn = Turn(self, key, claim, engine, accepted=True)  # any message
                return _updates(turn) if legacy else turn
            response: AgentResponse = await agent.run(turn_input, session=session)
        except BaseException:
            await lease.release()
            raise
        await lease.release(_store(session, mark, response))
        if legacy:
            return response
        return HostedRunResult(conversation_id, RunStatus.IDLE, outputs=[response],
                               turn=_record(mark, response))

    async def _finish(self, claim: AgentClaim, reply: AgentResponse | None,
                      error: BaseException | None) -> HostedRunResult:
        """A streamed turn's end: its agent session and record stored in one write."""
        if reply is None or error is not None:
            return await self._abandon(claim, error)
        await claim.lease.release(_store(claim.session, claim.mark, reply))
        return HostedRunResult(claim.key.conversation_id, RunStatus.IDLE, outputs=[reply],
                               turn=_record(claim.mark, reply))

    async def _abandon(self, claim: AgentClaim, error: BaseException | None = None
                       ) -> HostedRunResult:
        """A turn that did not finish: the agent session stays as it was; its outcome is
        recorded."""
        why = None if error is None else f"{type(error).__name__}: {error}"
        outcome = "cancelled" if error is None else "failed"
        await claim.lease.release(lambda state: record_outcome(state, claim.mark, outcome, why))
        return HostedRunResult(claim.key.conversation_id, RunStatus.CANCELLED)

    async def _refused(self, claim: AgentClaim, error: BaseException) -> None:
        await claim.lease.release()

    async def turns(self, conversation_id: str, *, principal: str | None = None
                    ) -> list[TurnRecord]:
        """The conversation's latest recorded turns, oldest first (at most ``MAX_TURNS``:
        the agent session's messages hold the whole history)."""
        key = ConversationKey(principal, conversation_id)
        stored = await self.session_store.get(key.session_id)
        if stored is None or not self._holds_conversation(stored.state):
            raise ConversationNotFoundError(conversation_id)
        return [_record(mark, mark.get("reply")) for mark in _marks(stored.state)]

    async def _locate(self, key: ConversationKey, turn_id: str | None,
                      idempotency_key: str | None) -> tuple[TurnRecord | None, None]:
        stored = await self.session_store.get(key.session_id)
        if stored is None:
            return None, None
        state = stored.state
        lease = state.get(LEASE_KEY)
        running = lease.get("turn") if isinstance(lease, dict) else None
        if isinstance(running, dict) and (running.get("id") == turn_id or (
                idempotency_key is not None and running.get("key") == idempotency_key)):
            return locate_turn(state, None, None, None, turn_id=turn_id, key=idempotency_key,
                               lease=lease, lease_live=lease_is_live(lease)), None
        found = _recorded(state, turn_id=turn_id, idempotency_key=idempotency_key)
        if found is None:
            found = recorded_outcome(state, turn_id=turn_id, key=idempotency_key)
        return found, None

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

    async def get_conversation(
        self, conversation_id: str, *, principal: str | None = None
    ) -> ConversationState:
        """The conversation as the ``Host`` protocol shows it: idle, its history as outputs."""
        session = await self.get_session(conversation_id, principal=principal)
        history = list(session.state.get("messages", ()))
        return ConversationState(conversation_id, RunStatus.IDLE, history, {}, None)

    async def get_checkpoint(
        self, conversation_id: str, *, principal: str | None = None
    ) -> tuple[Checkpoint, ResumeToken]:
        """Always ``NoCheckpointsError``: an agent host keeps a session, not checkpoints."""
        raise NoCheckpointsError(conversation_id)

    def _holds_conversation(self, state: dict[str, Any]) -> bool:
        return isinstance(state.get(AGENT_SESSION_KEY), AgentSession)

    async def delete_conversation(
        self, conversation_id: str, *, principal: str | None = None
    ) -> None:
        """Forget the conversation's agent session (``ConversationNotFoundError`` if none)."""
        key = ConversationKey(principal, conversation_id)
        lease = await self._leases.acquire(key, create=False)
        existed = self._holds_conversation(lease.session.state)
        await lease.release(lambda state: state.pop(AGENT_SESSION_KEY, None))
        if not existed:
            raise ConversationNotFoundError(conversation_id)


AgentRunStream = Turn
"""The name the agent host's streamed turns had before ``Turn`` (kept)."""


@dataclass(slots=True)
class AgentClaim:
    """An agent turn ready to run: the claimed conversation, the turn, the session copy."""

    key: ConversationKey
    lease: ConversationLease
    turn_id: str
    idempotency_key: str | None
    mark: dict[str, Any]
    session: AgentSession


async def _updates(turn: Turn) -> AsyncIterator[AgentResponseUpdate]:
    """The agent-shaped stream of a turn: the updates alone."""
    async with contextlib.aclosing(turn._events()) as events:
        async for event in events:
            if isinstance(event, AgentRunUpdateEvent):
                yield event.update


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


MAX_TURNS = 64
"""How many of its latest turns an agent conversation's session records."""
_TURNS_KEY = "agent_turns"


def _store(session: AgentSession, mark: dict[str, Any] | None = None,
           reply: AgentResponse | None = None) -> Any:
    """The session update of a good agent turn: its agent session and its record, together."""
    def update(state: dict[str, Any]) -> None:
        state[AGENT_SESSION_KEY] = session
        if mark is not None:
            turns = [*_marks(state), {**mark, "reply": reply}]
            state[_TURNS_KEY] = turns[-MAX_TURNS:]
    return update


def _marks(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [m for m in state.get(_TURNS_KEY, ()) if isinstance(m, dict)]


def _record(mark: Mapping[str, Any], reply: Any) -> TurnRecord:
    return TurnRecord(str(mark.get("id")), mark.get("key"), str(mark.get("protocol", "native")),
                      dict(mark.get("data") or {}), "committed", RunStatus.IDLE,
                      outputs=[] if reply is None else [reply])


def _recorded(state: Mapping[str, Any], *, turn_id: str | None = None,
              idempotency_key: str | None = None) -> TurnRecord | None:
    for mark in reversed(_marks(state)):
        if (turn_id is not None and mark.get("id") == turn_id) or (
                idempotency_key is not None and mark.get("key") == idempotency_key):
            return _record(mark, mark.get("reply"))
    return None
