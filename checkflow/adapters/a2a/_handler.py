"""The SDK's default request handler, with the behaviours the mapping changes.

- ``SendMessage`` / ``SendStreamingMessage``: a turn the gate started but the SDK never
  executed (its setup failed after the gate) is closed, so no lease is left held. A retried
  ``messageId`` is answered here: a recorded turn with its task as it is (nothing runs), a
  running one by following it (blocking: to its end; streaming: its events). Every stream
  opens with the ``Task``, a continuation's too (the SDK's would open with its status).
- ``SubscribeToTask``: follows the task from any process (``_follow``): a working task to
  its end, an input-required one through its continuation to its next interrupted or
  terminal state; a terminal one is ``-32004``.
- ``CancelTask``: unknown ``-32001``, terminal ``-32002``; a working task is cancelled
  through ``Host.cancel`` (from any process: its owner stops it within about a second) and
  answered once its turn ended; an input-required task is cancelled by the host dropping
  its turns from the conversation (``Host.cancel(..., turn_id=...)``), so its requests go too.

- Push configs: the SDK's create/get/list/delete on ``_push``'s store; every webhook URL
  (a message's own config too, before its turn starts) is checked by the adapter's policy.

Everything else (JSON-RPC, ProtoJSON, errors, versions, ``GetTask``, ``ListTasks``) is the
SDK's own, on the derived store. This module never converts workflow values itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.types import a2a_pb2
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.task import apply_history_length

from checkflow.adapters.a2a._deliver import PushDeliverer
from checkflow.adapters.a2a._executor import HostExecutor
from checkflow.adapters.a2a._follow import follow_task
from checkflow.adapters.a2a._gate import ATTEMPTS, BLOCKING, Attach, Replayed, RunGate
from checkflow.adapters.a2a._ids import TERMINAL, principal_of
from checkflow.adapters.a2a._push import PushURLError, invalid_push_url
from checkflow.adapters.a2a._store import REQUEST_VIEWS, A2ATaskStore, RequestViews
from checkflow.adapters.a2a._view import TaskView
from checkflow.hosting import Host

__all__ = ["A2ARequestHandler"]

_CANCEL_WAIT = 10.0  # how long CancelTask waits for the cancelled turn to end


def _not_the_event_stream_notice(record: logging.LogRecord) -> bool:
    # cross-replica *streaming* needs an SDK event stream; we follow remote turns through
    # Host.follow instead, so the SDK's notice about it does not apply here
    return not str(record.msg).startswith("A VersionedTaskStore was configured without")


logging.getLogger("a2a.server.request_handlers.default_request_handler_v2").addFilter(
    _not_the_event_stream_notice)


class A2ARequestHandler(DefaultRequestHandlerV2):
    """``DefaultRequestHandlerV2`` on our executor, gate and derived store."""

    def __init__(self, host: Host, store: A2ATaskStore, card: a2a_pb2.AgentCard, *,
                 gate: RunGate, executor: HostExecutor, idle_task_timeout: float,
                 follow_poll_seconds: float = 0.25, follow_max_seconds: float = 3600.0,
                 push: PushDeliverer | None = None) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the same notice, as a warning
            super().__init__(agent_executor=executor, task_store=store, agent_card=card,
                             request_context_builder=gate,
                             interrupted_task_timeout=idle_task_timeout,
                             push_config_store=push.store if push is not None else None,
                             push_url_validator=self._check_push_url)
        self._push = push
        self._host = host
        self._store = store
        self._executor = executor
        self._poll = follow_poll_seconds
        self._max = follow_max_seconds

    async def _check_push_url(self, url: str) -> bool:
        """The adapter's webhook policy; a refusal is -32602 naming what was wrong."""
        if self._push is not None:
            try:
                await self._push.policy.check(url)
            except PushURLError as exc:
                raise invalid_push_url(exc) from None
        return True

    async def _check_inline_push(self, params: a2a_pb2.SendMessageRequest) -> None:
        """A message's own push config is checked before its turn starts (the SDK would
        only check it once the gate started the turn)."""
        if self._push is not None and params.configuration.HasField(
                "task_push_notification_config"):
            await self._check_push_url(params.configuration.task_push_notification_config.url)

    async def _close_unexecuted(self, attempts: list[tuple[str, Any]]) -> None:
        for task_id, run in attempts:
            await self._executor.discard(task_id, run)

    async def _served(self, view: TaskView, context: ServerCallContext) -> a2a_pb2.Task:
        """The task as served now: the live copy while this process relays it."""
        stored = await self._store.get(view.task.id, context)
        return view.task if stored is None else stored.task

    def _follow(self, view: TaskView, first: a2a_pb2.Task, context: ServerCallContext
                ) -> AsyncIterator[Event]:
        return follow_task(self._host, self._store, view, first, principal_of(context),
                           poll_seconds=self._poll, max_seconds=self._max)

    async def on_message_send(self, params: a2a_pb2.SendMessageRequest,
                              context: ServerCallContext) -> a2a_pb2.Message | a2a_pb2.Task:
        """The SDK's SendMessage; a retry answers as recorded; an unexecuted turn is
        closed."""
        await self._check_inline_push(params)
        attempts: list[tuple[str, Any]] = []
        token = ATTEMPTS.set(attempts)
        blocking = BLOCKING.set(not params.configuration.return_immediately)
        views = REQUEST_VIEWS.set(RequestViews())
        try:
            reply: a2a_pb2.Message | a2a_pb2.Task = await super().on_message_send(params,
                                                                                 context)
            return reply
        except Replayed as replay:
            REQUEST_VIEWS.set(None)  # the recorded task as it is now
            view = await self._store.require(replay.task_id, context)
            return apply_history_length(view.task, params.configuration)
        except Attach as attach:
            REQUEST_VIEWS.set(None)
            view = await self._store.require(attach.task_id, context)
            task = view.task
            if not params.configuration.return_immediately:
                async for _ in self._follow(view, task, context):
                    pass
                task = (await self._store.require(attach.task_id, context)).task
            return apply_history_length(task, params.configuration)
        finally:
            REQUEST_VIEWS.reset(views)
            BLOCKING.reset(blocking)
            ATTEMPTS.reset(token)
            await self._close_unexecuted(attempts)

    async def on_message_send_stream(self, params: a2a_pb2.SendMessageRequest,
                                     context: ServerCallContext
                                     ) -> AsyncGenerator[Event, None]:
        """The SDK's SendStreamingMessage; a retry streams as recorded (or follows). A
        continuation's stream opens with the task too (A2A: a task's stream starts with
        its ``Task``), as it is once its continuation is accepted."""
        await self._check_inline_push(params)
        continuing = bool(params.message.task_id)
        attempts: list[tuple[str, Any]] = []
        token = ATTEMPTS.set(attempts)
        views = REQUEST_VIEWS.set(RequestViews())
        try:
            stream = super().on_message_send_stream(params, context)
            try:
                first = await anext(stream)
            except Replayed as replay:
                REQUEST_VIEWS.set(None)
                view = await self._store.require(replay.task_id, context)
                yield apply_history_length(view.task, params.configuration)
                return
            except Attach as attach:
                REQUEST_VIEWS.set(None)
                view = await self._store.require(attach.task_id, context)
                async for event in self._follow(view, await self._served(view, context),
                                                context):
                    yield event
                return
            finally:
                ATTEMPTS.reset(token)
                REQUEST_VIEWS.reset(views)
            if continuing and isinstance(first, a2a_pb2.TaskStatusUpdateEvent):
                first = await self._opening_task(first, params, context)
            yield first
            async for event in stream:
                yield event
        finally:
            await self._close_unexecuted(attempts)

    async def _opening_task(self, update: a2a_pb2.TaskStatusUpdateEvent,
                            params: a2a_pb2.SendMessageRequest, context: ServerCallContext
                            ) -> a2a_pb2.Task:
        """The task a continuation's first status update made (the SDK's copy: the new
        message in its history), in place of that update."""
        stored = await self._store.get(update.task_id, context)
        if stored is None:  # pragma: no cover - the relay saved it before it was sent
            raise TaskNotFoundError(message=f"task {update.task_id!r} not found")
        return apply_history_length(stored.task, params.configuration)

    async def on_subscribe_to_task(self, params: a2a_pb2.SubscribeToTaskRequest,
                                   context: ServerCallContext
                                   ) -> AsyncGenerator[Event, None]:
        """Follow a task: its state now, then its turns until it stops again."""
        view = await self._store.require(params.id, context)
        if view.state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {view.task.id} is "
                        f"{a2a_pb2.TaskState.Name(view.task.status.state)}: there is nothing "
                        f"more to stream")
        async for event in self._follow(view, await self._served(view, context), context):
            yield event

    async def on_cancel_task(self, params: a2a_pb2.CancelTaskRequest,
                             context: ServerCallContext) -> a2a_pb2.Task | None:
        """Cancel a working or input-required task through the host; -32002 otherwise."""
        view = await self._store.require(params.id, context)
        if view.state in TERMINAL:
            raise TaskNotCancelableError(
                message=f"task {params.id} is "
                        f"{a2a_pb2.TaskState.Name(view.task.status.state)} and cannot be "
                        f"canceled")
        principal = principal_of(context)
        context_id = view.task.context_id
        if view.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED and (
                params.id not in self._executor.running):
            await self._cancel_paused(view, principal)
        else:
            await self._host.cancel(context_id, principal=principal)
        end = time.monotonic() + _CANCEL_WAIT
        while True:
            fresh = await self._store.require(params.id, context)
            if ((fresh.last.state != "running" and params.id not in self._executor.running)
                    or time.monotonic() > end):  # else still stopping: the task as it is
                if self._push is not None:
                    self._push.poke(params.id)  # a paused task's cancel relays no turn
                return fresh.task
            await asyncio.sleep(0.02 if params.id in self._executor.running else 0.1)

    async def _cancel_paused(self, view: TaskView, principal: str | None) -> None:
        """Drop a paused task's turns from its conversation (so its requests go too): the
        head goes back to before the task's first turn, the turns are recorded cancelled."""
        await self._host.cancel(view.task.context_id, principal=principal,
                                turn_id=view.turns[0].turn_id)
