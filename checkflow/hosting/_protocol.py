"""The ``Host`` contract: what every adapter may ask of a host, and nothing else.

``WorkflowHost`` and ``AgentHost`` both satisfy it, so an adapter never branches on the host
type. Only the protocol and the small records it speaks in live here; this module must never
hold an implementation or import the web framework.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    Protocol,
    TypedDict,
    Unpack,
    overload,
    runtime_checkable,
)

if TYPE_CHECKING:
    from checkflow.checkpoints import Checkpoint
    from checkflow.hosting._records import RecordStore
    from checkflow.hosting._results import ConversationState, HostedRunResult, ResumeToken
    from checkflow.hosting._runs import HostedRun
    from checkflow.hosting._turns import TurnOrigin, TurnRecord
    from checkflow.workflows import WorkflowEvent

__all__ = ["Host", "HostDescription", "RunOptions"]


class RunOptions(TypedDict, total=False):
    """The keyword arguments of ``Host.run`` besides ``stream`` (all optional)."""

    message: Any
    responses: Mapping[str, Any] | None
    principal: str | None
    from_snapshot: str | None
    resume_token: ResumeToken | None
    idempotency_key: str | None
    origin: TurnOrigin | None
    shared_state: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class HostDescription:
    """What a host serves, for protocol metadata (agent cards, capability lists).

    ``input_types`` are the start executor's input annotations in dispatch order (an agent:
    ``list[ChatMessage]``); ``chat_input`` says whether a ``list[ChatMessage]`` is accepted.
    """

    name: str
    description: str
    input_types: tuple[Any, ...]
    chat_input: bool
    checkpoints: bool


@runtime_checkable
class Host(Protocol):
    """One conversation-serving host: run, read, delete, cancel, subscribe and list.

    Conversations are scoped by ``principal``: one principal never reaches another's. Every
    method raises the typed errors of ``checkflow.errors`` (``ConversationBusyError``,
    ``ConversationNotFoundError``, ...) that ``checkflow.hosting.error_response`` maps to HTTP.
    """

    async def describe(self) -> HostDescription:
        """Name, description and accepted input of what is hosted."""
        ...

    @overload
    async def run(
        self, conversation_id: str, *, stream: Literal[False] = False,
        **options: Unpack[RunOptions],
    ) -> HostedRunResult: ...

    @overload
    async def run(
        self, conversation_id: str, *, stream: Literal[True], **options: Unpack[RunOptions]
    ) -> HostedRun: ...

    async def run(
        self,
        conversation_id: str,
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
    ) -> HostedRunResult | HostedRun:
        """One turn: a ``HostedRunResult``, or (``stream=True``) a ``HostedRun`` of events,
        handed out once the engine accepted the input (a refusal is raised instead).

        ``message`` is converted to what the hosted target accepts (the start executor's
        input types, most specific first; an agent: text or chat messages); ``responses``
        answer pending requests by id. ``from_snapshot`` branches from an earlier snapshot;
        ``resume_token`` makes a retry safe (``StaleResumeTokenError`` once the head moved).
        ``idempotency_key`` makes the turn happen once: a retry of a committed turn replays
        its recorded outcome (``replayed``), of a running one raises
        ``TurnInProgressError``. ``origin`` is recorded with the turn (``turns``).
        ``shared_state`` writes keys of the workflow's shared state with the turn's input,
        in its first commit (an agent keeps none: ``SharedStateWriteError``).
        """
        ...

    async def turns(self, conversation_id: str, *, principal: str | None = None
                    ) -> list[TurnRecord]:
        """The turns on the conversation's lineage, oldest first: what views derive from."""
        ...

    async def find_turn(
        self, conversation_id: str, *, turn_id: str | None = None,
        idempotency_key: str | None = None, principal: str | None = None,
    ) -> TurnRecord | None:
        """One turn by id or key: running, committed, failed or cancelled; ``None`` if
        unknown. A turn whose owner died is reported failed."""
        ...

    def follow(
        self, conversation_id: str, *, turn_id: str | None = None, after: int | None = None,
        principal: str | None = None, poll_seconds: float = 0.25,
    ) -> AsyncIterator[WorkflowEvent]:
        """Follow a turn to its end from any process (a non-owner sees committed snapshots
        and the outcome, not per-executor events or token deltas)."""
        ...

    async def stop_turns(self) -> None:
        """Stop every turn running in this host object (a graceful shutdown)."""
        ...

    async def get_conversation(
        self, conversation_id: str, *, principal: str | None = None
    ) -> ConversationState:
        """The conversation at its head: status, outputs so far, pending requests, token."""
        ...

    async def get_checkpoint(
        self, conversation_id: str, *, principal: str | None = None
    ) -> tuple[Checkpoint, ResumeToken]:
        """The conversation's checkpoint (for snapshot views) and its last good head."""
        ...

    async def delete(self, conversation_id: str, *, principal: str | None = None) -> None:
        """Forget the conversation; a later run starts afresh."""
        ...

    async def cancel(self, conversation_id: str, *, principal: str | None = None,
                     turn_id: str | None = None) -> bool:
        """Stop the conversation's active run at its next safe point; ``False`` if none.
        With ``turn_id``, that turn only: running, or (with checkpoints) committed and
        paused, which takes the conversation's head back before it."""
        ...

    def subscribe(
        self, conversation_id: str, *, principal: str | None = None, after: int | None = None
    ) -> AsyncIterator[WorkflowEvent]:
        """The active run's events after sequence ``after``, then live ones, until it ends."""
        ...

    async def list_conversations(self, *, principal: str | None = None) -> list[str]:
        """The ids of this principal's conversations, sorted."""
        ...

    async def check_ready(self) -> None:
        """Raise if the host's stores cannot be reached."""
        ...

    def records(self, namespace: str) -> RecordStore:
        """Durable, principal-scoped records in the host's stores, for an adapter's own state."""
        ...
