"""What every host does the same way: leases, active runs, cancel, subscribe, records, listing.

``WorkflowHost`` and ``AgentHost`` differ only in what one turn runs and what a conversation's
session holds; everything an adapter reaches through the ``Host`` protocol besides that lives
here once. This module must never run a workflow or an agent itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, TypeVar

from checkflow._aio import shielded
from checkflow.errors import SessionError
from checkflow.hosting._follow import follow_turn
from checkflow.hosting._keys import CONVERSATION_KEY, ConversationKey
from checkflow.hosting._lease import LEASE_KEY, LeaseManager, lease_is_live, new_owner_id
from checkflow.hosting._records import DEFAULT_MAX_RECORD_BYTES, RecordStore
from checkflow.hosting._runs import RunRegistry, empty
from checkflow.sessions import AgentSession, InMemorySessionStore, SessionStore
from checkflow.workflows import WorkflowEvent

if TYPE_CHECKING:
    from checkflow.checkpoints import Checkpoint
    from checkflow.hosting._turns import TurnRecord
    from checkflow.workflows import Workflow

__all__ = ["HostBase", "shielded"]

T = TypeVar("T")
READY_CACHE_SECONDS = 2.0
_PROBE = "checkflow-readiness-probe"


class HostBase:
    """Conversation bookkeeping shared by the hosts (see ``checkflow.hosting.Host``).

    ``lease_seconds`` bounds how long a host that died mid-run keeps a conversation from other
    hosts (a dead process on the same machine is seen at once); ``renew_seconds`` (default a
    third of it) is how often a running host renews its lease; ``cancel_poll_seconds``
    (1 s) how often it reads its session for a cancel another process asked for.
    """

    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES
    """The bound on each adapter record's encoded size (``records``); ``None``: unbounded."""

    def __init__(
        self,
        session_store: SessionStore | None,
        *,
        lease_seconds: float,
        renew_seconds: float | None,
        cancel_poll_seconds: float = 1.0,
    ) -> None:
        self.session_store: SessionStore = session_store or InMemorySessionStore()
        self._leases = LeaseManager(
            self.session_store, owner=new_owner_id(), lease_seconds=lease_seconds,
            renew_seconds=renew_seconds, cancel_poll_seconds=cancel_poll_seconds)
        self._runs = RunRegistry()
        self._ready_at: float | None = None
        self._ready_error: Exception | None = None

    def _holds_conversation(self, state: dict[str, Any]) -> bool:
        """Whether a conversation session's state holds a conversation to show."""
        raise NotImplementedError

    async def delete_conversation(
        self, conversation_id: str, *, principal: str | None = None
    ) -> None:
        raise NotImplementedError

    async def delete(self, conversation_id: str, *, principal: str | None = None) -> None:
        """Forget the conversation (``delete_conversation``): ``ConversationNotFoundError``
        if there is none, ``ConversationBusyError`` while it runs."""
        await self.delete_conversation(conversation_id, principal=principal)

    async def cancel(self, conversation_id: str, *, principal: str | None = None,
                     turn_id: str | None = None) -> bool:
        """Stop the conversation's active run at its next safe point; ``False`` if none runs.

        A run in this host object stops at once (an executor awaiting I/O is cancelled; a
        snapshot commit in flight completes first); its result is ``CANCELLED`` and the
        conversation keeps its last good head. A run owned by another host sharing the
        session store is asked through its session and stops when that host next reads it
        (within its ``cancel_poll_seconds``). With ``turn_id`` only that turn is stopped; a
        host with checkpoints also cancels a committed turn that paused (``WorkflowHost``).
        """
        key = ConversationKey(principal, conversation_id)
        active = self._runs.get(key)
        if active is not None and turn_id in (None, active.run_id):
            await active.cancel()
            return True
        if turn_id is not None and await self._running_turn_id(key) != turn_id:
            return await self._cancel_committed(key, turn_id)
        return await self._leases.request_cancel(key)

    async def _cancel_committed(self, key: ConversationKey, turn_id: str) -> bool:
        """Cancel a turn that is not running (a host without snapshots has none to undo)."""
        return False

    def subscribe(
        self, conversation_id: str, *, principal: str | None = None, after: int | None = None
    ) -> AsyncIterator[WorkflowEvent]:
        """Re-attach to the conversation's active run in this host object.

        Replays the run's events with ``sequence > after`` (all of them when ``after`` is
        ``None``), then streams live ones, and ends when the run ends. With no active run here
        the stream is empty: it ends at once, it never waits for a run to start.
        """
        active = self._runs.get(ConversationKey(principal, conversation_id))
        return empty() if active is None else active.follow(after)

    async def _running_turn_id(self, key: ConversationKey) -> str | None:
        """The id of the turn a live lease runs on the conversation now, if any."""
        session = await self.session_store.get(key.session_id)
        lease = None if session is None else session.state.get(LEASE_KEY)
        running = lease.get("turn") if isinstance(lease, dict) else None
        if lease_is_live(lease) and isinstance(running, dict):
            return str(running.get("id"))
        return None

    async def _locate(self, key: ConversationKey, turn_id: str | None,
                      idempotency_key: str | None) -> tuple[TurnRecord | None,
                                                            Checkpoint | None]:
        """A turn's record and the stored checkpoint holding its snapshots, if any."""
        raise NotImplementedError

    async def _inspector(self) -> Workflow | None:
        """The workflow whose types decode this host's snapshots (``None``: no snapshots)."""
        return None

    async def find_turn(
        self, conversation_id: str, *, turn_id: str | None = None,
        idempotency_key: str | None = None, principal: str | None = None,
    ) -> TurnRecord | None:
        """One turn by id or idempotency key, wherever it is recorded; ``None`` if unknown.

        With neither, the turn running now (``None`` if none runs). ``state`` is
        ``"running"`` while a live lease runs it, ``"committed"`` once recorded with the
        conversation, ``"failed"``/``"cancelled"`` as the session recorded it; a
        turn whose owner died (its lease expired, or its process is gone) is ``"failed"`` at
        once, before anyone takes the conversation over.
        """
        key = ConversationKey(principal, conversation_id)
        if turn_id is None and idempotency_key is None:
            turn_id = await self._running_turn_id(key)
            if turn_id is None:
                return None  # asked for the running turn: none runs
        record, _ = await self._locate(key, turn_id, idempotency_key)
        return record

    def follow(
        self, conversation_id: str, *, turn_id: str | None = None, after: int | None = None,
        principal: str | None = None, poll_seconds: float = 0.25,
    ) -> AsyncIterator[WorkflowEvent]:
        """Follow a turn from any process, to its end (see ``checkflow.hosting._follow``).

        In the process that runs it, its live events after ``after``; elsewhere, what it
        committed as it lands (polled every ``poll_seconds``), then its outcome: what a
        non-owner cannot see is the owner's per-executor events and token deltas.
        ``turn_id=None`` follows the turn running now; with none running the stream is empty.
        """
        key = ConversationKey(principal, conversation_id)
        active = self._runs.get(key)
        if active is not None and turn_id in (None, active.run_id):
            return active.follow(after)
        return follow_turn(self, key, turn_id, after, poll_seconds)

    async def stop_turns(self) -> None:
        """Stop every turn running in this host object, each at its next safe point, and
        return once all have stopped (their conversations keep their last good heads).

        For a graceful shutdown: each turn's stream then ends with its cancelled outcome,
        which every adapter renders as its protocol's terminal event.
        """
        runs = self._runs.active()
        if runs:
            await asyncio.gather(*(run.cancel() for run in runs), return_exceptions=True)

    async def check_ready(self) -> None:
        """Raise if the stores cannot be read and written (a cheap write probe, whose
        outcome is kept for ``READY_CACHE_SECONDS`` so a busy readiness probe costs nothing)."""
        now = time.monotonic()
        if self._ready_at is not None and now - self._ready_at < READY_CACHE_SECONDS:
            if self._ready_error is not None:
                raise self._ready_error
            return
        try:
            probe = AgentSession(_PROBE, {"probe": True})
            await self.session_store.set(probe)
            await self.session_store.get(_PROBE)
            await self._probe_more()
        except Exception as exc:
            self._ready_at, self._ready_error = now, exc
            raise
        self._ready_at, self._ready_error = now, None

    async def _probe_more(self) -> None:
        """What else a host must reach to be ready (its checkpoint storage, say)."""

    def records(self, namespace: str) -> RecordStore:
        """Durable, principal-scoped records in this host's session store (for adapters)."""
        return RecordStore(self.session_store, namespace, max_bytes=self.max_record_bytes)

    async def list_conversations(self, *, principal: str | None = None) -> list[str]:
        """The ids of ``principal``'s conversations, sorted (reads every session: for
        operators and small deployments, not a hot path)."""
        found = []
        for session_id in await self.session_store.list_session_ids():
            if not ConversationKey.is_session_id(session_id):
                continue
            try:
                session = await self.session_store.get(session_id)
            except SessionError:
                continue  # unreadable here (damage, or types this process lacks): skip it
            identity = None if session is None else session.state.get(CONVERSATION_KEY)
            if (session is None or not isinstance(identity, dict)
                    or identity.get("principal") != principal
                    or not self._holds_conversation(session.state)):
                continue
            found.append(str(identity.get("conversation_id")))
        return sorted(found)
