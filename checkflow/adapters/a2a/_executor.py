"""The a2a ``AgentExecutor`` that relays a hosted run into the SDK's event queue.

The run itself is started before the SDK sees the request (``_gate``), so every refusal
(busy context, unknown request id, ...) reaches the client as an error with nothing stored;
``execute`` then only relays: the task first (or, for a one-call run whose only output is an
``A2AMessage``, a direct message), ``WORKING``, one artifact update per output, the final
status. ``cancel`` cancels through ``Host.cancel``. This module never parses protocol input and
never writes the task store itself (the SDK does, from these events).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.types import a2a_pb2
from a2a.utils.errors import InternalError

from checkflow.adapters.a2a._events import RunEvents
from checkflow.adapters.a2a._parts import message_to_proto
from checkflow.adapters.a2a._store import principal_of
from checkflow.adapters.a2a._types import A2AMessage
from checkflow.hosting import Host, HostedRun
from checkflow.workflows import OutputEvent, RequestInfoEvent, RunStatus, WorkflowEvent

__all__ = ["HostExecutor", "PreparedRun"]


@dataclass(eq=False)
class PreparedRun:
    """A host run started for one A2A request, waiting for ``execute`` to relay it.

    ``events`` is the run's one event iterator; ``seen`` the events the gate already took
    from it (up to the accepted input) and the relay sends first.
    """

    stream: HostedRun
    events: AsyncIterator[WorkflowEvent]
    seen: list[WorkflowEvent]
    new_task: bool
    run_index: int
    may_reply: bool = False
    """A new task of a start executor taking ``A2AMessage``: a lone ``A2AMessage`` output of
    this first call is the direct reply, so the task is only announced once that is ruled
    out (its first other output, a request, or the end)."""
    claimed: bool = field(default=False)


class HostExecutor(AgentExecutor):
    """Relays prepared host runs; tracks which tasks run in this process."""

    def __init__(self, host: Host) -> None:
        self._host = host
        self._prepared: dict[str, PreparedRun] = {}
        self._cancelling: set[str] = set()
        self.running: set[str] = set()
        """Task ids whose run this process is relaying right now."""

    def prepare(self, task_id: str, run: PreparedRun) -> None:
        """Hand ``execute`` the run it relays for ``task_id``."""
        self._prepared[task_id] = run

    async def discard(self, task_id: str, run: PreparedRun) -> None:
        """Close a prepared run the SDK never executed (its request failed on the way)."""
        if self._prepared.get(task_id) is run:
            del self._prepared[task_id]
        if not run.claimed:
            await run.stream.aclose()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Relay the prepared run of ``context.task_id`` as A2A events."""
        task_id, context_id = context.task_id or "", context.context_id or ""
        run = self._prepared.pop(task_id, None)
        if run is None:
            raise InternalError(message=f"no run was started for task {task_id!r}")
        run.claimed = True
        self.running.add(task_id)
        try:
            await _Relay(run, RunEvents(task_id, context_id, run.run_index), context,
                         event_queue, self._cancelling).relay()
        finally:
            self.running.discard(task_id)
            self._cancelling.discard(task_id)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task's run through the host, then mark the task CANCELED."""
        task_id, context_id = context.task_id or "", context.context_id or ""
        self._cancelling.add(task_id)
        await self._host.cancel(context_id, principal=principal_of(context.call_context))
        events = RunEvents(task_id, context_id, 0)
        await event_queue.enqueue_event(events.status(
            a2a_pb2.TASK_STATE_CANCELED, message=events.agent_message("canceled")))


class _Relay:
    def __init__(self, run: PreparedRun, events: RunEvents, context: RequestContext,
                 queue: EventQueue, cancelling: set[str]) -> None:
        self.run, self.events, self.context, self.queue = run, events, context, queue
        self.cancelling = cancelling
        self.started = False
        self.held: tuple[A2AMessage, int] | None = None

    async def start(self) -> None:
        if not self.started:
            self.started = True
            if self.run.new_task:
                message = self.context.message
                await self.queue.enqueue_event(a2a_pb2.Task(
                    id=self.events.task_id, context_id=self.events.context_id,
                    status=a2a_pb2.TaskStatus(state=a2a_pb2.TASK_STATE_SUBMITTED),
                    history=[message] if message is not None else []))
            await self.queue.enqueue_event(self.events.status(a2a_pb2.TASK_STATE_WORKING))
        if self.held is not None:
            (held, sequence), self.held = self.held, None
            await self.queue.enqueue_event(self.events.output(held, sequence))

    async def _events(self) -> AsyncIterator[WorkflowEvent]:
        for event in self.run.seen:
            yield event
        async for event in self.run.events:
            yield event

    async def relay(self) -> None:
        stream = self.run.stream
        if not self.run.may_reply:
            await self.start()
        try:
            async for event in self._events():
                if isinstance(event, OutputEvent):
                    if (isinstance(event.data, A2AMessage) and not self.started
                            and self.held is None):
                        # maybe the direct reply: decided when the run ends
                        self.held = (event.data, event.sequence)
                        continue
                    await self.start()
                    await self.queue.enqueue_event(self.events.output(event.data,
                                                                      event.sequence))
                elif isinstance(event, RequestInfoEvent):
                    await self.start()
            result = await stream.get_result()
        except asyncio.CancelledError:
            await asyncio.shield(stream.aclose())
            raise
        if self.events.task_id in self.cancelling:
            return  # cancel() writes the final state
        if (self.held is not None and not self.started and result.status is RunStatus.IDLE
                and not result.pending_requests):
            await self.queue.enqueue_event(message_to_proto(
                self.held[0], message_id=uuid.uuid4().hex, context_id=self.events.context_id))
            return
        await self.start()
        await self.queue.enqueue_event(self.events.final(
            result.status, pending=result.pending_requests, resume_token=result.resume_token,
            error=result.error))
