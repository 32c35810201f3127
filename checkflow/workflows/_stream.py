"""``WorkflowRunStream``: a run's events as an async iterator, with its result and a cancel.

The run executes in its own task and hands each event over in lock-step (it waits until the
consumer has taken it) through a ``_Handoff`` made of bare futures (no task or queue per
event: a run emits a dozen events, and this is the hot path of every hosted turn), so a
consumer that stops reading stops the run between events, and ``aclose()`` cancels it before
the next superstep's work. A consumer that reads every event to the end anyway (a drain:
``get_result()``, or a host answering one request) calls ``unpaced()``: the run then parks
its events and goes on, and the consumer takes them in order whenever it runs, so an event
costs no switch between the two tasks. The stream never commits anything itself; a cancelled
run ends CANCELLED with the head at its last completed superstep.

The run's task must never reference the stream object: a stream dropped without ``aclose()``
is then freed (at once, in CPython) and its finalizer cancels the run, releasing the
checkpoint's active-run guard.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from checkflow.workflows._events import WorkflowEvent
from checkflow.workflows._results import RunStatus, WorkflowRunResult

if TYPE_CHECKING:
    from checkflow.workflows._runner import Runner

__all__ = ["WorkflowRunStream"]


class WorkflowRunStream:
    """Iterate ``async for event in stream``; then ``await stream.get_result()``.

    ``await stream.aclose()`` cancels the run (between supersteps; a started snapshot commit
    completes first); the result is then CANCELLED. Use ``async with`` or call ``aclose()``
    to release the checkpoint deterministically; a stream abandoned without it cancels its
    run when it is garbage-collected.
    """

    def __init__(self, runner: Runner) -> None:
        self._runner = runner
        self._handoff = _Handoff()
        self._task: asyncio.Task[WorkflowRunResult] | None = None
        self._cancelled = False

    def _started(self) -> asyncio.Task[WorkflowRunResult]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._runner.run(self._handoff.hand_over))
            self._task.add_done_callback(self._handoff.run_ended)
        return self._task

    def __del__(self) -> None:
        task = self._task
        if task is not None and not task.done():
            loop = task.get_loop()
            if not loop.is_closed():  # the collector may run in any thread
                loop.call_soon_threadsafe(task.cancel)

    def __aiter__(self) -> WorkflowRunStream:
        return self

    async def __anext__(self) -> WorkflowEvent:
        if self._cancelled:
            raise StopAsyncIteration
        task = self._started()
        event = await self._handoff.take()
        if event is not None:
            return event
        if task.cancelled():
            raise StopAsyncIteration
        task.result()  # raises the run's error, if any
        raise StopAsyncIteration

    def unpaced(self) -> None:
        """Stop pacing the run by this consumer: it no longer waits for each event to be taken.

        For a consumer that reads every event to the end (a drain). Events still come in
        order and ``aclose()`` still cancels the run at its next await; only "stop reading to
        pause the run" is given up.
        """
        self._handoff.paced = False

    async def drain(self, each: Callable[[WorkflowEvent], object]) -> None:
        """Run to the end unpaced, calling ``each(event)`` for every event in order.

        What ``async for event in stream: each(event)`` after ``unpaced()`` does, without an
        iterator step per event (a host draining a turn). Raises the run's error, if any;
        returns early when the stream is closed meanwhile.
        """
        self.unpaced()
        task = self._started()
        handoff = self._handoff
        while not self._cancelled:
            event = handoff.take_parked()  # what is parked already: no await per event
            if event is None:
                event = await handoff.take()
                if event is None:
                    if not task.cancelled():
                        task.result()  # raises the run's error, if any
                    return
            each(event)

    async def get_result(self) -> WorkflowRunResult:
        """Drain the remaining events and return the final result (or raise the run's error)."""
        if not self._cancelled:
            await self.drain(_ignore)
        if self._cancelled:  # closed before, or by another task while this one drained
            return self._runner.result(RunStatus.CANCELLED)
        return self._started().result()

    async def aclose(self) -> None:
        """Cancel the run; nothing more is committed. Safe to call more than once."""
        task = self._task
        if task is None:
            self._cancelled = True
        elif not task.done():
            self._cancelled = True
            task.cancel()
            await asyncio.wait([task])
        elif not task.cancelled():
            task.exception()  # retrieved: closing early must not warn "never retrieved"

    async def __aenter__(self) -> WorkflowRunStream:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def _ignore(_event: WorkflowEvent) -> None:
    pass


class _Handoff:
    """Events from the run's task(s) to the consumer, one at a time; never holds the stream.

    ``hand_over`` (the run's sink; executors running side by side may call it at once) parks
    the event in line and returns what to await until the consumer takes it (``None`` when
    not ``paced``); ``take`` returns the first parked event, waiting for one, or ``None`` once
    the run ended.
    """

    __slots__ = ("_ended", "_parked", "_waiter", "paced")

    def __init__(self) -> None:
        self._parked: collections.deque[
            tuple[WorkflowEvent, asyncio.Future[None] | None]] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None  # the consumer waits on it
        self._ended = False
        self.paced = True

    def hand_over(self, event: WorkflowEvent) -> Awaitable[None] | None:
        if not self.paced:  # nothing to wait for: no coroutine either
            self._parked.append((event, None))
            self._wake()
            return None
        return self._handed_over(event)

    async def _handed_over(self, event: WorkflowEvent) -> None:
        entry: tuple[WorkflowEvent, asyncio.Future[None] | None]
        entry = (event, asyncio.get_running_loop().create_future())
        self._parked.append(entry)
        self._wake()
        taken = entry[1]
        try:
            await taken
        finally:
            if taken.cancelled() and entry in self._parked:  # nobody may take it now
                self._parked.remove(entry)

    def run_ended(self, _task: object) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take_parked(self) -> WorkflowEvent | None:
        """The first parked event (releasing a paced run waiting on it), or ``None``; never
        waits."""
        while self._parked:
            event, taken = self._parked.popleft()
            if taken is None:  # handed over unpaced: nobody waits for it
                return event
            if not taken.done():  # else its run was cancelled while parked
                taken.set_result(None)
                return event
        return None

    async def take(self) -> WorkflowEvent | None:
        while True:
            event = self.take_parked()
            if event is not None:
                return event
            if self._ended:
                return None
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter  # cancelled: the consumer went away, nothing is left pending
            finally:
                self._waiter = None
