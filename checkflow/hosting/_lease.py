"""Who may run a conversation right now: an in-process busy set and a cross-process lease.

The busy set is checked and claimed synchronously, before anything is loaded, so a second
request to a conversation running in this process is refused at once. The lease is recorded
in the conversation's session (owner and expiry) through an ``expected_version`` write (a
create-only one for a brand-new conversation), so a second host sharing the session store
refuses the conversation too; it is cleared when the run ends. The checkpoint storage's
conflict check stays the last line of defence.

A host that does not own a running conversation asks its owner to stop by recording
``state["cancel"]`` in the session; the owner reads its session every ``cancel_poll_seconds``
while it runs (and at each renewal), so a cross-process cancel takes effect within about that
long. The lease names the turn it runs (``state["lease"]["turn"]``); a host taking over an
expired lease, or one whose owner died, records that turn's outcome as failed in the same
write, so no turn is left running for ever. This module must never queue a request or wait
for a conversation to become free.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from checkflow._aio import shielded
from checkflow.errors import (
    ConversationBusyError,
    ConversationNotFoundError,
    SessionConflictError,
    TurnInProgressError,
)
from checkflow.hosting._keys import ConversationKey
from checkflow.hosting._turns import DEAD_OWNER, record_outcome
from checkflow.sessions import AgentSession, SessionStore

__all__ = [
    "BusySet",
    "ConversationLease",
    "LeaseManager",
    "lease_is_live",
    "new_owner_id",
    "owner_is_gone",
    "process_identity",
    "settle_dead_turn",
]

_log = logging.getLogger("checkflow.hosting")

LEASE_KEY = "lease"
CANCEL_KEY = "cancel"
SessionUpdate = Callable[[dict[str, Any]], None]


def new_owner_id() -> str:
    """A lease owner id unique to this host object: host name, process id and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def process_identity(pid: int) -> str | None:
    """What tells process ``pid`` on this machine from any other, ever: the boot id and the
    process's start time (so a reused pid is another process). ``None`` if it is not running
    or the system does not say (then liveness is never assumed gone)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
    return f"{boot}:{fields[19]}"  # field 22 of stat: the start time in clock ticks


_HOST = socket.gethostname()
_SELF = process_identity(os.getpid())


def owner_is_gone(lease: dict[str, Any]) -> bool:
    """Whether a lease's owner is a process of THIS machine that no longer runs.

    Only a process on the same host can be seen to be dead; a lease of another host, or of a
    process whose identity this system does not expose, is waited out (or unlocked by an
    operator).
    """
    if lease.get("host") != _HOST or _SELF is None:
        return False
    pid, identity = lease.get("pid"), lease.get("process")
    if not isinstance(pid, int) or not isinstance(identity, str):
        return False
    return process_identity(pid) != identity


def settle_dead_turn(state: dict[str, Any]) -> None:
    """Record the turn of a lease left behind by an owner that died as failed (a lease that
    is being replaced, or that ``read`` found expired or ownerless)."""
    previous = state.get(LEASE_KEY)
    running = previous.get("turn") if isinstance(previous, dict) else None
    if isinstance(running, dict) and isinstance(running.get("id"), str):
        record_outcome(state, running, "failed", DEAD_OWNER)
    state.pop(CANCEL_KEY, None)  # a cancel request dies with its run


def lease_is_live(lease: Any) -> bool:
    """Whether a lease record still holds its conversation (unexpired, owner not gone)."""
    return (isinstance(lease, dict) and float(lease.get("expires_at", 0.0)) > time.time()
            and not owner_is_gone(lease))


class BusySet:
    """The conversations with a run (or a delete) in progress in this process."""

    def __init__(self) -> None:
        self._keys: set[ConversationKey] = set()

    def claim(self, key: ConversationKey) -> None:
        """Mark ``key`` busy or raise ``ConversationBusyError``; never awaits."""
        if key in self._keys:
            raise ConversationBusyError(key.conversation_id, retry_after=1.0)
        self._keys.add(key)

    def release(self, key: ConversationKey) -> None:
        """Mark ``key`` free again (a no-op if it was not claimed)."""
        self._keys.discard(key)


class ConversationLease:
    """A held lease: the session as leased, and the one way to end the lease.

    While held, the lease is renewed every third of its duration (a CAS write of a later
    expiry, like the lease itself not synced to disk: see ``SessionStore.set``), so a run
    longer than ``lease_seconds`` never loses its conversation to another host; only a host
    that died stops renewing.
    """

    def __init__(
        self, manager: LeaseManager, key: ConversationKey, session: AgentSession,
        *, took_over: bool = False, created: bool = False,
        turn: dict[str, Any] | None = None, read_version: str | None = None,
    ) -> None:
        self._manager = manager
        self.read_version = read_version  # the session's version before this lease's write
        self.turn = turn  # the turn this lease runs (id, key, protocol), renewed with it
        self.key = key
        self.session = session
        self.took_over = took_over  # an expired lease of another owner was replaced
        self.created = created  # this lease's write created the session (a new conversation)
        self.on_cancel: Callable[[], Awaitable[None]] | None = None  # set by the running host
        self._cancelling: asyncio.Task[None] | None = None
        # A timer, not a sleeping task: most runs end before the first renewal is due.
        self._loop = asyncio.get_running_loop()
        self._stopped = False
        self._renewing: asyncio.Task[None] | None = None
        self._timer = self._loop.call_later(manager.renew_seconds, self._renewal_due)
        self._polling: asyncio.Task[None] | None = None
        self._poll = self._loop.call_later(manager.cancel_poll_seconds, self._poll_due)

    def _poll_due(self) -> None:
        if not self._stopped and self._renewing is None:
            self._polling = self._loop.create_task(self._check_cancel())
        elif not self._stopped:
            self._poll = self._loop.call_later(self._manager.cancel_poll_seconds,
                                               self._poll_due)

    async def _check_cancel(self) -> None:
        """Read the session (never write it): has another host asked this run to stop?"""
        try:
            fresh = await self._manager.store.get(self.session.session_id)
        except Exception:  # a store hiccup: the renewal will look again
            fresh = None
        if fresh is not None and CANCEL_KEY in fresh.state and not self._stopped:
            lease = fresh.state.get(LEASE_KEY)
            if isinstance(lease, dict) and lease.get("owner") == self._manager.owner:
                self._cancel_requested()
        if not self._stopped:
            self._poll = self._loop.call_later(self._manager.cancel_poll_seconds,
                                               self._poll_due)

    def _renewal_due(self) -> None:
        if not self._stopped:
            self._renewing = self._loop.create_task(self._renew())

    async def _renew(self) -> None:
        try:
            if not await self._renew_once():
                return  # lost to another host: stop renewing
        except Exception:  # a store hiccup must not end the run: try again next interval
            _log.warning("conversation %r: renewing the lease failed; retrying",
                         self.key.conversation_id, exc_info=True)
        if not self._stopped:
            self._timer = self._loop.call_later(self._manager.renew_seconds,
                                                self._renewal_due)

    async def _renew_once(self) -> bool:
        """Extend the lease; honour a recorded cancel request. False when the lease is lost."""
        store = self._manager.store
        self.session.state[LEASE_KEY] = self._manager.new_lease(self.turn)
        try:
            await store.set(self.session, expected_version=self.session.version, durable=False)
            return True
        except SessionConflictError:
            fresh = await store.get(self.session.session_id)
        lease = None if fresh is None else fresh.state.get(LEASE_KEY)
        ours = isinstance(lease, dict) and lease.get("owner") == self._manager.owner
        if fresh is None or not ours:
            _log.warning("conversation %r: lease lost to another host while running",
                         self.key.conversation_id)
            return False
        if CANCEL_KEY in fresh.state:
            self._cancel_requested()
        fresh.state[LEASE_KEY] = self._manager.new_lease(self.turn)
        await store.set(fresh, expected_version=fresh.version, durable=False)
        self.session = fresh
        return True

    def _cancel_requested(self) -> None:
        """Stop the run in a task of its own: stopping releases this lease, which awaits us."""
        if self.on_cancel is not None and self._cancelling is None:
            _log.info("conversation %r: cancelled by a request recorded in its session",
                      self.key.conversation_id)
            self._cancelling = asyncio.ensure_future(self.on_cancel())

    async def release(self, update: SessionUpdate | None = None, *, discard: bool = False) -> None:
        """Stop renewing; apply ``update`` to the session, clear the lease and store it (CAS).

        It always lands: a caller cancelled meanwhile does not stop it (the one shield over
        every lease's end, so no caller shields it again).

        If another writer replaced the session meanwhile (a lease that expired and was taken
        over), ``update`` is re-applied to the fresh session, leaving a live lease of another
        host in place, so neither host's record is lost. ``update`` must therefore be safe to
        apply to any version. ``discard=True`` says the run committed nothing: a session this
        lease created is then deleted (at the version it holds), so a refused first request
        leaves no record; if it changed meanwhile it is kept and only the lease is cleared.
        """
        await shielded(self._release(update, discard))

    async def _release(self, update: SessionUpdate | None, discard: bool) -> None:
        try:
            self._stopped = True
            self._timer.cancel()
            self._poll.cancel()
            if self._polling is not None and not self._polling.done():
                self._polling.cancel()  # a read: nothing to finish
            if self._renewing is not None:
                await self._renewing  # lets a renewal write in flight finish; never cancelled
            if discard and self.created and await self._delete():
                return
            await self._store(update)
        finally:
            self.on_cancel = None  # nothing left to cancel; frees the run without the cyclic GC
            self._manager.busy.release(self.key)

    async def _delete(self) -> bool:
        """Delete the session if it is still as this lease wrote it; whether it was."""
        try:
            await self._manager.store.delete(
                self.session.session_id, expected_version=self.session.version
            )
        except SessionConflictError:
            return False
        return True

    async def _store(self, update: SessionUpdate | None) -> None:
        store = self._manager.store
        session = self.session
        for _attempt in range(3):
            if update is not None:
                update(session.state)
            if self._manager.foreign_lease_remaining(session) == 0:
                session.state.pop(LEASE_KEY, None)  # ours, or expired: end it
                session.state.pop(CANCEL_KEY, None)  # a cancel request dies with its run
            try:
                await store.set(session, expected_version=session.version)
                return
            except SessionConflictError:
                fresh = await store.get(session.session_id)
                if fresh is None:
                    break  # the conversation was deleted meanwhile
                session = fresh  # re-apply to what is there; a live foreign lease is kept
        _log.warning(
            "conversation %r: the session kept changing under this host; update dropped",
            self.key.conversation_id,
        )


class LeaseManager:
    """Takes and ends conversation leases in one session store for one owner (one host)."""

    def __init__(self, store: SessionStore, *, owner: str, lease_seconds: float,
                 renew_seconds: float | None = None, cancel_poll_seconds: float = 1.0
                 ) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, not {lease_seconds!r}")
        if renew_seconds is not None and not 0 < renew_seconds < lease_seconds:
            raise ValueError(
                f"renew_seconds must be between 0 and lease_seconds ({lease_seconds}), "
                f"not {renew_seconds!r}")
        self.busy = BusySet()
        self.store = store
        self.owner = owner
        self.lease_seconds = lease_seconds
        self.renew_seconds = renew_seconds if renew_seconds is not None else lease_seconds / 3
        if cancel_poll_seconds <= 0:
            raise ValueError(
                f"cancel_poll_seconds must be positive, not {cancel_poll_seconds!r}")
        self.cancel_poll_seconds = cancel_poll_seconds

    async def request_cancel(self, key: ConversationKey) -> bool:
        """Record a cancel request for a run another owner holds; whether one was running."""
        for _attempt in range(5):
            session = await self.store.get(key.session_id)
            if session is None:
                return False
            lease = session.state.get(LEASE_KEY)
            if not isinstance(lease, dict) or float(lease.get("expires_at", 0.0)) <= time.time(
            ) or owner_is_gone(lease):
                return False  # nothing runs (or its owner died): nothing to stop
            if CANCEL_KEY in session.state:
                return True
            session.state[CANCEL_KEY] = {"requested_at": time.time(), "by": self.owner}
            try:
                await self.store.set(session, expected_version=session.version)
            except SessionConflictError:
                continue  # a renewal or the run's end got there first: look again
            return True
        return False

    def new_lease(self, turn: dict[str, Any] | None = None) -> dict[str, Any]:
        """This owner's lease record, expiring ``lease_seconds`` from now.

        It names the host, process id and process identity too, so a restarted server on the
        same machine sees at once that the owner died and need not wait the lease out, and
        the turn it runs (``turn``: its id, key and protocol).
        """
        lease = {"owner": self.owner, "expires_at": time.time() + self.lease_seconds,
                 "host": _HOST, "pid": os.getpid(), "process": _SELF}
        if turn is not None:
            lease["turn"] = turn
        return lease

    def foreign_lease_remaining(self, session: AgentSession) -> float:
        """Seconds left on a lease held by another, living owner (0 when none, expired, or
        its owner is a process of this machine that is gone)."""
        lease = session.state.get(LEASE_KEY)
        if not isinstance(lease, dict) or lease.get("owner") == self.owner:
            return 0.0
        remaining = max(0.0, float(lease.get("expires_at", 0.0)) - time.time())
        if remaining and owner_is_gone(lease):
            _log.warning("conversation session %r: lease owner %s is gone; taking over",
                         session.session_id, lease.get("owner"))
            return 0.0
        return remaining

    async def acquire(self, key: ConversationKey, *, create: bool = True,
                      turn: dict[str, Any] | None = None) -> ConversationLease:
        """Claim ``key`` in this process, then record a lease in its session.

        The session is created if missing, by a create-only write, so of two hosts racing to
        start one brand-new conversation exactly one gets it and the other is refused before
        it loads or creates any checkpoint. With ``create=False`` a missing session raises
        ``ConversationNotFoundError`` instead and nothing is written (deleting an unknown
        conversation must not leave a record behind).

        Raises ``ConversationBusyError`` at once when the conversation runs in this process,
        and (with the lease's remaining time as ``retry_after``) when another owner holds a
        live lease or wins the write; ``TurnInProgressError`` when that lease runs a turn
        with ``turn``'s idempotency key. The caller must ``release()`` the returned lease.
        """
        try:
            self.busy.claim(key)
        except ConversationBusyError:
            _log.warning("conversation %r is busy in this process; request refused",
                         key.conversation_id)
            raise
        try:
            return await self._lease(key, create, turn)
        except ConversationBusyError as exc:
            self.busy.release(key)
            _log.warning("conversation %r is busy on another host; request refused "
                         "(retry after %ss)", key.conversation_id, exc.retry_after)
            raise
        except BaseException:
            self.busy.release(key)
            raise

    async def _lease(self, key: ConversationKey, create: bool,
                     turn: dict[str, Any] | None) -> ConversationLease:
        session = await self.store.get(key.session_id)
        created = session is None
        if session is None:
            if not create:
                raise ConversationNotFoundError(key.conversation_id)
            session = AgentSession(key.session_id, {"conversation": key.describe()})
        remaining = self.foreign_lease_remaining(session)
        previous = session.state.get(LEASE_KEY)
        if remaining > 0:
            running = previous.get("turn") if isinstance(previous, dict) else None
            wait = math.ceil(remaining)
            if (turn is not None and turn.get("key") is not None
                    and isinstance(running, dict) and running.get("key") == turn["key"]):
                raise TurnInProgressError(key.conversation_id, str(running.get("id")),
                                          idempotency_key=turn["key"], retry_after=wait)
            raise ConversationBusyError(key.conversation_id, retry_after=wait)
        took_over = isinstance(previous, dict) and previous.get("owner") != self.owner
        if took_over and isinstance(previous, dict) and not owner_is_gone(previous):
            _log.warning("conversation session %r: lease of owner %s expired; taking over",
                         session.session_id, previous.get("owner"))
        settle_dead_turn(session.state)
        read_version = session.version
        session.state[LEASE_KEY] = self.new_lease(turn)
        try:  # not synced to disk (a crash loses it with the run), unless it creates the session
            await self.store.set(session, expected_version=session.version, create=created,
                                 durable=False)
        except SessionConflictError:
            raise ConversationBusyError(key.conversation_id, retry_after=1.0) from None
        return ConversationLease(self, key, session, took_over=took_over, created=created,
                                 turn=turn, read_version=read_version)
