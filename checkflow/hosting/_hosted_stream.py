"""``HostedRunStream``: one hosted workflow turn in flight, streamed or drained by the host.

It wraps the engine's ``WorkflowRunStream``: passes each event on (and into the run's log,
for subscribers), and when the run ends stores the conversation's session exactly once
through the host (a new good head, or the old one after a failure or a cancel). Closing it
early, from the consumer or from ``Host.cancel`` in another task, cancels the run between
supersteps. This module must never decide what a session holds; the host does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from checkflow.errors import (
    CheckpointConflictError,
    CheckpointInUseError,
    ConversationBusyError,
    WorkflowConvergenceError,
    WorkflowRunError,
)
from checkflow.hosting._host_base import shielded
from checkflow.hosting._runs import ActiveRun, HostedRun

if TYPE_CHECKING:
    from checkflow.hosting._keys import ConversationKey
    from checkflow.hosting._results import HostedRunResult
    from checkflow.hosting._workflow_host import Prepared, WorkflowHost
    from checkflow.workflows import WorkflowEvent, WorkflowRunStream

__all__ = ["FAILURES", "HostedRunStream", "is_conflict"]

FAILURES = (WorkflowRunError, WorkflowConvergenceError)
"""A run that failed in the workflow: a FAILED result, not an error of the host."""


class HostedRunStream(HostedRun):
    """A streamed hosted run: iterate the workflow's events, then ``await get_result()``.

    The conversation stays claimed until the stream is exhausted or ``aclose()``d; closing
    early (or ``Host.cancel``) cancels the run between supersteps; the result is then
    ``CANCELLED`` and the conversation keeps its last good head.
    """

    def __init__(
        self,
        host: WorkflowHost,
        key: ConversationKey,
        prepared: Prepared,
        inner: WorkflowRunStream,
    ) -> None:
        self._host = host
        self._key = key
        self._prepared = prepared
        self._inner = inner
        self._result: HostedRunResult | None = None
        self._error: BaseException | None = None
        self._done = asyncio.Event()
        self._finishing = False
        self._active: ActiveRun = host._runs.start(key, self.aclose)
        self.run_id = self._active.run_id
        prepared.lease.on_cancel = self.aclose

    def __aiter__(self) -> AsyncIterator[WorkflowEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WorkflowEvent]:
        """The events; at the end, the session is stored (shielded from the consumer's
        cancellation)."""
        exhausted = False
        try:
            async for event in self._inner:
                self._active.publish(event)
                yield event
            exhausted = True
        except FAILURES:
            exhausted = True  # the failure is reported by get_result()
        finally:
            if exhausted and not self._finishing:
                await shielded(self._complete())
            elif not exhausted:
                await self.aclose()

    async def _complete(self) -> None:
        self._finishing = True
        host, prepared = self._host, self._prepared
        try:
            result = await self._inner.get_result()
        except FAILURES as exc:
            self._result = await host._finish(prepared, exc.result, exc)
        except BaseException as exc:
            await host._abandon(prepared)
            self._error = ConversationBusyError(self._key.conversation_id) if is_conflict(
                exc) else exc
            if self._error is not exc:
                raise self._error from exc
            raise
        else:
            self._result = await host._finish(prepared, result, None)
        finally:
            self._end()

    async def _drain(self) -> None:
        """Run the rest of the stream; only ever awaited shielded, in a task of its own.

        ``_events`` without an iterator step per event: each is published as it is taken,
        the session stored at the end, and a run that stops early closes the stream."""
        try:  # every event is read to the end: unpaced, no switch per event
            await self._inner.drain(self._active.publish)
        except FAILURES:
            pass  # the failure is reported by get_result()
        except BaseException:
            await self.aclose()
            raise
        if not self._finishing:
            await self._complete()

    async def get_result(self) -> HostedRunResult:
        """The run's outcome (runs the rest of the stream if it was not consumed)."""
        if not self._finishing:
            # A task of its own, started on the loop's next turn (not eagerly): the loop then
            # runs the drains of the requests it read together, one after another. Measured
            # with bench/hosting.py, that costs less CPU per conversation under load than
            # starting each drain (or its whole run) at once.
            await asyncio.shield(asyncio.ensure_future(self._drain()))
        await self._done.wait()
        if self._result is None:
            raise self._error or ConversationBusyError(self._key.conversation_id)
        return self._result

    async def aclose(self) -> None:
        """Stop the run (between supersteps) and release the conversation."""
        if self._finishing:
            await self._done.wait()
            return
        self._finishing = True
        try:
            await self._inner.aclose()
        finally:
            try:
                self._result = await shielded(self._host._abandon(self._prepared))
            finally:
                self._end()

    def _end(self) -> None:
        self._host._runs.end(self._active)
        self._done.set()


def is_conflict(exc: BaseException) -> bool:
    """Another run got the checkpoint first: for the client, the conversation was busy."""
    return isinstance(exc, (CheckpointConflictError, CheckpointInUseError))
