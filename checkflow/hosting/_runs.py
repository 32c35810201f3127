"""The runs a host has in flight: their event logs (for ``subscribe``) and their cancel hooks.

Each hosted run registers an ``ActiveRun`` under its conversation for as long as it runs.
Every event the run emits is appended to the run's log as it passes, so a subscriber can
replay what it missed (events after a sequence number) and then follow live events; the log
ends with the run. ``cancel`` reaches the run through the same record. ``HostedRun`` is the
one shape of a streamed hosted run, whatever the host. This module must never decide whether
a conversation may run (leases do) and never touch a checkpoint or a session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from checkflow._random import random_hex
from checkflow.hosting._keys import ConversationKey

if TYPE_CHECKING:
    from checkflow.checkpoints import Checkpoint
    from checkflow.hosting._results import HostedRunResult
    from checkflow.workflows import WorkflowEvent

__all__ = ["ActiveRun", "HostedRun", "RunRegistry"]


class HostedRun:
    """A streamed hosted run: ``async for event in run``, then ``await run.get_result()``.

    ``await run.aclose()`` stops it at the next safe point (the conversation keeps its last
    good head); ``run_id`` names it for logs and protocols.
    """

    run_id: str
    turn_id: str
    """The turn's id: what its snapshots record, and what ``Host.follow`` takes."""
    replayed: bool = False
    """True for a retry of a committed turn (same idempotency key): nothing ran."""

    async def accept(self) -> None:
        """Return once the engine accepted the turn's input (hosts hand turns out after it)."""

    def __aiter__(self) -> AsyncIterator[WorkflowEvent]:
        raise NotImplementedError

    async def get_result(self) -> HostedRunResult:
        """The run's outcome (runs the rest of the stream if it was not consumed)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Stop the run between supersteps and release the conversation."""
        raise NotImplementedError

    async def __aenter__(self) -> HostedRun:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class ActiveRun:
    """One running turn: its log of events so far, whether it ended, and how to stop it."""

    def __init__(self, key: ConversationKey, cancel: Callable[[], Awaitable[None]],
                 run_id: str | None = None, idempotency_key: str | None = None) -> None:
        self.key = key
        self.run_id = run_id or random_hex()
        self.idempotency_key = idempotency_key
        self.mark: dict[str, Any] | None = None  # the turn's mark (with its origin's data)
        self.checkpoint: Checkpoint | None = None  # the checkpoint it runs on, if any
        self.events: list[WorkflowEvent] = []
        self.done = False
        self._cancel = cancel
        self._signal: asyncio.Event | None = None  # made by the first follower that waits

    def publish(self, event: WorkflowEvent) -> None:
        """Append an event the run emitted and wake every follower."""
        self.events.append(event)
        self._wake()

    def finish(self) -> None:
        """Mark the run ended: followers drain the log and stop.

        The way to stop it is dropped: a cancel now has nothing to stop, and the run's
        objects, which that callback reaches, are then freed at once by reference counting
        instead of waiting for the cyclic garbage collector.
        """
        self.done = True
        self._cancel = _ended
        self.checkpoint = None
        self._wake()

    def _wake(self) -> None:
        signal, self._signal = self._signal, None  # most runs have no follower: no Event
        if signal is not None:
            signal.set()

    async def cancel(self) -> None:
        """Stop the run at its next safe point (returns once it has stopped)."""
        await self._cancel()

    async def follow(self, after: int | None) -> AsyncIterator[WorkflowEvent]:
        """Events with ``sequence > after`` already logged, then live ones, until the end."""
        index = 0
        while True:
            events = self.events
            while index < len(events):
                event = events[index]
                index += 1
                if after is None or event.sequence > after:
                    yield event
            if self.done:
                return
            if self._signal is None:
                self._signal = asyncio.Event()
            await self._signal.wait()


class RunRegistry:
    """The active runs of one host object, by conversation."""

    def __init__(self) -> None:
        self._runs: dict[ConversationKey, ActiveRun] = {}

    def start(self, key: ConversationKey, cancel: Callable[[], Awaitable[None]],
              run_id: str | None = None, idempotency_key: str | None = None) -> ActiveRun:
        """Register a run of ``key`` (the lease guarantees there is no other here)."""
        run = self._runs[key] = ActiveRun(key, cancel, run_id, idempotency_key)
        return run

    def active(self) -> list[ActiveRun]:
        """Every run in flight here (a graceful shutdown stops them)."""
        return list(self._runs.values())

    def end(self, run: ActiveRun) -> None:
        """The run ended: finish its log and forget it."""
        run.finish()
        if self._runs.get(run.key) is run:
            del self._runs[run.key]

    def get(self, key: ConversationKey) -> ActiveRun | None:
        """The active run of ``key`` in this host object, if any."""
        return self._runs.get(key)


async def _ended() -> None:
    """The cancel of a run that ended: nothing left to stop."""


async def empty() -> AsyncIterator[WorkflowEvent]:
    """A stream that ends at once (``subscribe`` with nothing running)."""
    nothing: tuple[WorkflowEvent, ...] = ()
    for event in nothing:
        yield event
