"""``WorkflowRunStream``: a run's events as an async iterator, with its result and a cancel.

The run executes in its own task and hands each event over in lock-step (it waits until the
consumer has taken it), so a consumer that stops reading stops the run between events, and
``aclose()`` cancels it before the next superstep's work. The stream never commits anything
itself; a cancelled run ends CANCELLED with the head at its last completed superstep.

The run's task must never reference the stream object: a stream dropped without ``aclose()``
is then freed (at once, in CPython) and its finalizer cancels the run, releasing the
checkpoint's active-run guard.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from checkflow.workflows._events import WorkflowEvent
from checkflow.workflows._results import RunStatus, WorkflowRunResult

if TYPE_CHECKING:
    from checkflow.workflows._runner import Runner, Sink

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
        self._queue: asyncio.Queue[WorkflowEvent] = asyncio.Queue(maxsize=1)
        self._task: asyncio.Task[WorkflowRunResult] | None = None
        self._cancelled = False

    def _started(self) -> asyncio.Task[WorkflowRunResult]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._runner.run(_hand_over_to(self._queue)))
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
        getter = asyncio.ensure_future(self._queue.get())
        try:
            await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            getter.cancel()  # the consumer went away: leave no pending getter behind
            raise
        if getter.done():
            self._queue.task_done()
            return getter.result()
        getter.cancel()
        if task.cancelled():
            raise StopAsyncIteration
        task.result()  # raises the run's error, if any
        raise StopAsyncIteration

    async def get_result(self) -> WorkflowRunResult:
        """Drain the remaining events and return the final result (or raise the run's error)."""
        if not self._cancelled:
            async for _ in self:
                pass
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


def _hand_over_to(queue: asyncio.Queue[WorkflowEvent]) -> Sink:
    """The run's event sink: waits until the consumer took each event (never holds the stream)."""

    async def hand_over(event: WorkflowEvent) -> None:
        await queue.put(event)
        await queue.join()

    return hand_over
