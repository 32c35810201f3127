"""The SDK's default request handler, with the three behaviours the mapping changes.

- ``SendMessage`` / ``SendStreamingMessage``: a run the gate started but the SDK never
  executed (its setup failed after the gate) is closed, so no lease is left held.
- ``SubscribeToTask``: an input-required task answers with its current state and ends; a
  working task relayed by this process is tapped as the SDK does; one running elsewhere is
  followed through ``Host.subscribe``; a terminal one is ``-32004``.
- ``CancelTask``: unknown ``-32001``, terminal ``-32002``; otherwise the SDK cancels (its
  local path calls our executor's ``cancel``, i.e. ``Host.cancel``; its remote path writes
  CANCELED, which the relaying process sees on its next write and stops), then ``Host.cancel``.

Everything else (JSON-RPC, ProtoJSON, errors, versions, ``GetTask``, ``ListTasks``) is the
SDK's own. This module never converts workflow values itself.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncGenerator

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.types import a2a_pb2
from a2a.utils.errors import TaskNotCancelableError, UnsupportedOperationError

from checkflow.adapters.a2a._events import RunEvents, run_index_of
from checkflow.adapters.a2a._executor import HostExecutor
from checkflow.adapters.a2a._gate import ATTEMPTS, RunGate
from checkflow.adapters.a2a._store import TERMINAL, A2ATaskStore, principal_of
from checkflow.hosting import Host
from checkflow.workflows import (
    OutputEvent,
    PendingRequest,
    RequestInfoEvent,
    RunStatus,
    WorkflowFailedEvent,
    WorkflowStatusEvent,
)

__all__ = ["A2ARequestHandler"]


def _not_the_event_stream_notice(record: logging.LogRecord) -> bool:
    # cross-replica *streaming* needs an SDK event stream; we follow remote runs through
    # Host.subscribe instead, so the SDK's notice about it does not apply here
    return not str(record.msg).startswith("A VersionedTaskStore was configured without")


logging.getLogger("a2a.server.request_handlers.default_request_handler_v2").addFilter(
    _not_the_event_stream_notice)


class A2ARequestHandler(DefaultRequestHandlerV2):
    """``DefaultRequestHandlerV2`` on our executor, gate and durable store."""

    def __init__(self, host: Host, store: A2ATaskStore, card: a2a_pb2.AgentCard, *,
                 gate: RunGate, executor: HostExecutor, idle_task_timeout: float) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the same notice, as a warning
            super().__init__(agent_executor=executor, task_store=store, agent_card=card,
                             request_context_builder=gate,
                             interrupted_task_timeout=idle_task_timeout)
        self._host = host
        self._store = store
        self._executor = executor

    async def _close_unexecuted(self, attempts: list[tuple[str, object]]) -> None:
        for task_id, run in attempts:
            await self._executor.discard(task_id, run)  # type: ignore[arg-type]

    async def on_message_send(self, params: a2a_pb2.SendMessageRequest,
                              context: ServerCallContext) -> a2a_pb2.Message | a2a_pb2.Task:
        """The SDK's SendMessage; a run it never executed is closed."""
        attempts: list[tuple[str, object]] = []
        token = ATTEMPTS.set(attempts)  # type: ignore[arg-type]
        try:
            reply: a2a_pb2.Message | a2a_pb2.Task = await super().on_message_send(params,
                                                                                 context)
            return reply
        finally:
            ATTEMPTS.reset(token)
            await self._close_unexecuted(attempts)

    async def on_message_send_stream(self, params: a2a_pb2.SendMessageRequest,
                                     context: ServerCallContext
                                     ) -> AsyncGenerator[Event, None]:
        """The SDK's SendStreamingMessage; a run it never executed is closed."""
        attempts: list[tuple[str, object]] = []
        token = ATTEMPTS.set(attempts)  # type: ignore[arg-type]
        try:
            stream = super().on_message_send_stream(params, context)
            try:
                first = await anext(stream)
            finally:
                ATTEMPTS.reset(token)
            yield first
            async for event in stream:
                yield event
        finally:
            await self._close_unexecuted(attempts)

    async def on_subscribe_to_task(self, params: a2a_pb2.SubscribeToTaskRequest,
                                   context: ServerCallContext
                                   ) -> AsyncGenerator[Event, None]:
        """Re-attach to a task: its state now, then its run's events until it stops."""
        task = (await self._store.require(params.id, context)).task
        if task.status.state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {task.id} is {a2a_pb2.TaskState.Name(task.status.state)}: "
                        f"there is nothing more to stream")
        if task.status.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED:
            yield task
            return
        if task.id in self._executor.running:
            async for event in super().on_subscribe_to_task(params, context):
                yield event
            return
        yield task
        async for event in self._follow(task, context):
            yield event

    async def _follow(self, task: a2a_pb2.Task, context: ServerCallContext
                      ) -> AsyncGenerator[Event, None]:
        """A run relayed by another process, through ``Host.subscribe``."""
        events = RunEvents(task.id, task.context_id, run_index_of(task))
        known = {a.artifact_id for a in task.artifacts}
        pending: dict[str, PendingRequest] = {}
        status: RunStatus | None = None
        failure: BaseException | None = None
        async for event in self._host.subscribe(task.context_id,
                                                principal=principal_of(context)):
            if isinstance(event, OutputEvent):
                update = events.output(event.data, event.sequence)
                if update.artifact.artifact_id not in known:
                    yield update
            elif isinstance(event, RequestInfoEvent):
                pending[event.request.request_id] = event.request
            elif isinstance(event, WorkflowStatusEvent):
                status = event.status
            elif isinstance(event, WorkflowFailedEvent):
                status, failure = RunStatus.FAILED, event.error
        # The relaying process writes the final state too; prefer it when it is there.
        stored = await self._store.get(task.id, context)
        if stored is not None and stored.task.status.state != a2a_pb2.TASK_STATE_WORKING:
            yield stored.task
        elif status is not None and status is not RunStatus.RUNNING:
            yield events.final(status, pending=pending, resume_token=None, error=failure)
        # else: no run of this conversation is visible here; the stream ends at the task

    async def on_cancel_task(self, params: a2a_pb2.CancelTaskRequest,
                             context: ServerCallContext) -> a2a_pb2.Task | None:
        """Cancel a working or input-required task through the host; -32002 otherwise."""
        stored = await self._store.require(params.id, context)
        if stored.task.status.state in TERMINAL:
            raise TaskNotCancelableError(
                message=f"task {params.id} is "
                        f"{a2a_pb2.TaskState.Name(stored.task.status.state)} and cannot be "
                        f"canceled")
        task: a2a_pb2.Task | None = await super().on_cancel_task(params, context)
        await self._host.cancel(stored.task.context_id, principal=principal_of(context))
        return task
