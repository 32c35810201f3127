"""The a2a ``AgentExecutor`` that relays a hosted turn into the SDK's event queue.

The turn itself is started before the SDK sees the request (``_gate``), and ``Host.run``
hands it over only once the engine accepted its input, so every refusal (busy context,
unknown request id, ...) reaches the client as an error with nothing stored; ``execute`` only
relays: the task first (or, for a blocking one-call turn whose only output is an
``A2AMessage``, a direct message), ``WORKING``, one artifact update per output, the final
status (a turn stopped by a cancel or by the server's shutdown ends ``CANCELED``). This
module never parses protocol input and never writes anything: what the task is afterwards,
the turns say (``_view``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.utils.errors import InternalError

from checkflow.adapters.a2a._events import RunEvents
from checkflow.adapters.a2a._ids import principal_of
from checkflow.adapters.a2a._parts import message_to_proto
from checkflow.adapters.a2a._types import A2AMessage
from checkflow.hosting import Host, Turn
from checkflow.workflows import OutputEvent, RequestInfoEvent, RunStatus

__all__ = ["HostExecutor", "PreparedRun"]


@dataclass(eq=False)
class PreparedRun:
    """A host turn started for one A2A request, waiting for ``execute`` to relay it."""

    turn: Turn
    new_task: bool
    run_index: int
    """The turn's place in its task (names its artifacts, as the derived task does)."""
    may_reply: bool = False
    """A new task of a start executor taking ``A2AMessage``, asked by a blocking request: a
    lone ``A2AMessage`` output of this first call is the direct reply, so the task is only
    announced once that is ruled out (its first other output, a request, or the end)."""
    claimed: bool = field(default=False)


class HostExecutor(AgentExecutor):
    """Relays prepared host turns; tracks which tasks this process relays now."""

    def __init__(self, host: Host) -> None:
        self._host = host
        self._prepared: dict[str, PreparedRun] = {}
        self.running: set[str] = set()
        """Task ids whose turn this process is relaying right now."""
        self.on_end: Callable[[str], None] = lambda task_id: None
        """Called once a relay ended (the store drops its live copy)."""

    def prepare(self, task_id: str, run: PreparedRun) -> None:
        """Hand ``execute`` the turn it relays for ``task_id``."""
        self._prepared[task_id] = run
        self.running.add(task_id)

    async def discard(self, task_id: str, run: PreparedRun) -> None:
        """Close a prepared turn the SDK never executed (its request failed on the way)."""
        if self._prepared.get(task_id) is run:
            del self._prepared[task_id]
            self._ended(task_id)
        if not run.claimed:
            await run.turn.aclose()

    def _ended(self, task_id: str) -> None:
        self.running.discard(task_id)
        self.on_end(task_id)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Relay the prepared turn of ``context.task_id`` as A2A events."""
        task_id, context_id = context.task_id or "", context.context_id or ""
        run = self._prepared.pop(task_id, None)
        if run is None:
            raise InternalError(message=f"no turn was started for task {task_id!r}")
        run.claimed = True
        self.running.add(task_id)
        try:
            await _Relay(run, RunEvents(task_id, context_id, run.run_index), context,
                         event_queue).relay()
        finally:
            self._ended(task_id)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task's turn through the host (the relay then ends it CANCELED)."""
        await self._host.cancel(context.context_id or "",
                                principal=principal_of(context.call_context))


class _Relay:
    def __init__(self, run: PreparedRun, events: RunEvents, context: RequestContext,
                 queue: EventQueue) -> None:
        self.run, self.events, self.context, self.queue = run, events, context, queue
        self.started = False
        self.held: tuple[A2AMessage, int] | None = None

    async def start(self) -> None:
        if not self.started:
            self.started = True
            if self.run.new_task:
                await self.queue.enqueue_event(self.events.submitted(self.context.message))
            await self.queue.enqueue_event(self.events.working())
        if self.held is not None:
            (held, index), self.held = self.held, None
            await self.queue.enqueue_event(self.events.output(held, index))

    async def relay(self) -> None:
        turn = self.run.turn
        if not self.run.may_reply:
            await self.start()
        outputs = 0
        try:
            async for event in turn:
                if isinstance(event, OutputEvent):
                    index, outputs = outputs, outputs + 1
                    if (isinstance(event.data, A2AMessage) and self.run.may_reply
                            and not self.started and self.held is None):
                        self.held = (event.data, index)  # maybe the direct reply
                        continue
                    await self.start()
                    await self.queue.enqueue_event(self.events.output(event.data, index))
                elif isinstance(event, RequestInfoEvent):
                    await self.start()
            result = await turn.get_result()
        except asyncio.CancelledError:
            await asyncio.shield(turn.aclose())
            raise
        if (self.held is not None and not self.started and result.status is RunStatus.IDLE
                and not result.pending_requests and outputs == 1):
            await self.queue.enqueue_event(message_to_proto(
                self.held[0], message_id=uuid.uuid4().hex, context_id=self.events.context_id))
            return
        await self.start()
        error = result.error if result.status is not RunStatus.CANCELLED else (
            "canceled: the turn was stopped (a cancel, or the server shutting down)")
        record = result.turn  # stamped as the derived task is, so every read agrees
        await self.queue.enqueue_event(self.events.final(
            result.status, pending=result.pending_requests, resume_token=result.resume_token,
            error=error, at=record.ended_at if record is not None else None,
            last_output=result.outputs[-1] if result.outputs else None))
