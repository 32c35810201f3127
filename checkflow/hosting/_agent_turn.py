"""An agent's run as the engine of a hosted ``Turn``: its updates as ``Host`` events.

``Turn`` drives a workflow's ``WorkflowRunStream``; this gives an ``AgentHost`` turn the same
shape (iterate, ``drain``, ``get_result``, ``aclose``), so both hosts' turns are one class
with one lease, one shield and one session write. An agent takes any message, so its turn
has no acceptance to wait for. It emits one ``AgentRunUpdateEvent``
per update, then the reply as an ``OutputEvent`` and an ``IDLE`` status. This module must
never touch a store; the host's ``_finish`` stores the agent session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

from checkflow.agents import AgentResponse, AgentResponseUpdate, AgentRunUpdateEvent
from checkflow.workflows import OutputEvent, RunStatus, WorkflowEvent, WorkflowStatusEvent

__all__ = ["AgentEngine"]


class AgentEngine:
    """The agent's update stream, stepped in tasks of their own so that ``aclose()`` from
    another task stops it without touching a generator that is running."""

    def __init__(self, updates: AsyncIterator[AgentResponseUpdate], author: str) -> None:
        self._updates = updates
        self._author = author
        self._received: list[AgentResponseUpdate] = []
        self._tail: list[WorkflowEvent] | None = None  # the reply and status, once complete
        self._sequence = 0
        self._cancelled = asyncio.Event()
        self._closed = False
        self.response: AgentResponse | None = None

    def __aiter__(self) -> AgentEngine:
        return self

    def _stamp(self, event: WorkflowEvent) -> WorkflowEvent:
        self._sequence += 1
        event.sequence = self._sequence
        event.timestamp = datetime.now(UTC)
        return event

    async def __anext__(self) -> WorkflowEvent:
        if self._tail is None:
            update = None if self._closed else await self._next()
            if update is not None:
                self._received.append(update)
                return self._stamp(AgentRunUpdateEvent(self._author, update))
            if self._cancelled.is_set() or self._closed:
                raise StopAsyncIteration
            self.response = AgentResponse.from_updates(self._received)
            self._tail = [self._stamp(OutputEvent(self._author, self.response)),
                          self._stamp(WorkflowStatusEvent(RunStatus.IDLE))]
        if not self._tail:
            raise StopAsyncIteration
        return self._tail.pop(0)

    async def _next(self) -> AgentResponseUpdate | None:
        """The agent's next update, or ``None`` at its end or when the turn is cancelled."""
        step = asyncio.ensure_future(anext(self._updates, None))
        stop = asyncio.ensure_future(self._cancelled.wait())
        try:
            await asyncio.wait({step, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if step.done():
            return step.result()
        step.cancel()
        await asyncio.wait([step])
        return None

    async def drain(self, each: Callable[[WorkflowEvent], object]) -> None:
        """Run to the end, calling ``each(event)`` for every event in order."""
        async for event in self:
            each(event)

    async def get_result(self) -> AgentResponse | None:
        """The reply (runs the rest first); ``None`` when the turn was cancelled."""
        if not self._closed:
            await self.drain(_ignore)
        return None if self._cancelled.is_set() else self.response

    async def aclose(self) -> None:
        """Stop the agent (from any task); the reply, if not complete, is dropped."""
        if self.response is None:
            self._cancelled.set()
        if self._closed:
            return
        self._closed = True
        aclose = getattr(self._updates, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


def _ignore(_event: WorkflowEvent) -> None:
    pass
