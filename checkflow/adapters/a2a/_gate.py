"""The gate every ``SendMessage`` passes: protocol rules, then the host run is started.

It runs inside the SDK's request setup (as its ``RequestContextBuilder``), before the SDK
creates or touches a task, so a refusal is a plain protocol error and nothing is stored:

- ``contextId`` is the host conversation id (scoped by principal); one that cannot be used
  is refused, never replaced; without one a new context is made.
- a message with ``taskId`` continues that task: only an input-required one, with a data part
  mapping request ids to values (or any value when exactly one request waits); the task's
  resume token goes with it, so of two racing continuations exactly one wins;
- a message without ``taskId`` while a task of the context awaits input is refused naming it;
- a busy conversation is refused at once (the host's lease), never queued.

The started run is handed to the executor, which relays it. This module never enqueues
events and never writes the task store.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from a2a.server.agent_execution import RequestContext, RequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.types import a2a_pb2
from a2a.utils.errors import (
    InvalidParamsError,
    InvalidRequestError,
    UnsupportedOperationError,
)

from checkflow.adapters.a2a._events import pending_ids, resume_token_of
from checkflow.adapters.a2a._executor import HostExecutor, PreparedRun
from checkflow.adapters.a2a._parts import input_value, message_from_proto
from checkflow.adapters.a2a._store import TERMINAL, A2ATaskStore, principal_of
from checkflow.errors import (
    ConversationBusyError,
    ConversationNotFoundError,
    HostingError,
    InvalidMessageError,
    InvalidResponseError,
    StaleResumeTokenError,
    WorkflowError,
)
from checkflow.hosting import Host, HostedRun, ResumeToken
from checkflow.workflows import SnapshotCommittedEvent, WorkflowEvent

__all__ = ["ATTEMPTS", "RunGate", "check_context_id"]

ATTEMPTS: contextvars.ContextVar[list[tuple[str, PreparedRun]]] = contextvars.ContextVar(
    "checkflow_a2a_attempts")
"""The runs one request prepared, so the handler closes those the SDK never executed."""

_MAX_CONTEXT_ID = 256


def check_context_id(context_id: str) -> None:
    """Refuse a client ``contextId`` the native API could not address as a path segment."""
    if (len(context_id) > _MAX_CONTEXT_ID or "/" in context_id
            or any(ord(c) < 32 or ord(c) == 127 for c in context_id)):
        raise InvalidParamsError(
            message=f"contextId {context_id[:80]!r} cannot be used: it must be at most "
                    f"{_MAX_CONTEXT_ID} characters without '/' or control characters")


def _state_name(task: a2a_pb2.Task) -> str:
    return str(a2a_pb2.TaskState.Name(task.status.state))


def responses_for(task: a2a_pb2.Task, message: a2a_pb2.Message) -> dict[str, Any]:
    """The host ``responses`` a continuation message carries for a paused task."""
    waiting = pending_ids(task)
    received = message_from_proto(message)
    data = [p.data for p in received.parts if p.kind == "data"]
    if len(data) == 1 and isinstance(data[0], dict) and set(data[0]) & set(waiting):
        unknown = sorted(set(data[0]) - set(waiting))
        if unknown:
            raise InvalidParamsError(
                message=f"task {task.id} has no pending request {unknown[0]!r} "
                        f"(pending: {', '.join(waiting)})")
        return dict(data[0])
    if len(waiting) == 1:
        return {waiting[0]: input_value(message, whole_message=False)}
    raise InvalidParamsError(
        message=f"task {task.id} waits for responses to {', '.join(waiting)}: send one data "
                f"part mapping request ids to values")


class RunGate(RequestContextBuilder):
    """Applies the mapping's rules to a ``SendMessage`` and starts its host run."""

    def __init__(self, host: Host, store: A2ATaskStore, executor: HostExecutor,
                 takes_a2a_message: Callable[[], Awaitable[bool]]) -> None:
        self._host = host
        self._store = store
        self._executor = executor
        self._takes_a2a_message = takes_a2a_message

    async def build(self, context: ServerCallContext,
                    params: a2a_pb2.SendMessageRequest | None = None,
                    task_id: str | None = None, context_id: str | None = None,
                    task: a2a_pb2.Task | None = None) -> RequestContext:
        """Check the request, start its run, and name the task the run belongs to."""
        if params is None:
            raise InvalidRequestError(message="SendMessage needs a message")
        if task_id:
            context_id, run = await self._continue(task_id, params.message, context)
        else:
            task_id = uuid.uuid4().hex
            context_id, run = await self._new_task(task_id, context_id, params.message,
                                                   context)
        attempts = ATTEMPTS.get(None)
        if attempts is not None:
            attempts.append((task_id, run))
        self._executor.prepare(task_id, run)
        return RequestContext(call_context=context, request=params, task_id=task_id,
                              context_id=context_id, task=task)

    async def _continue(self, task_id: str, message: a2a_pb2.Message,
                        context: ServerCallContext) -> tuple[str, PreparedRun]:
        current = (await self._store.require(task_id, context)).task
        if current.status.state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {task_id} is {_state_name(current)} and takes no more "
                        f"messages; send one without taskId to start a new task in context "
                        f"{current.context_id}")
        if current.status.state != a2a_pb2.TASK_STATE_INPUT_REQUIRED:
            raise UnsupportedOperationError(
                message=f"task {task_id} is {_state_name(current)}: it is not waiting for "
                        f"input (subscribe to it, or cancel it)")
        responses = responses_for(current, message)
        run = await self._start(current.context_id, context, task_id=task_id,
                                responses=responses, resume_token=resume_token_of(current))
        run.run_index = sum(1 for m in current.history if m.role == a2a_pb2.ROLE_USER)
        return current.context_id, run

    async def _new_task(self, task_id: str, context_id: str | None, message: a2a_pb2.Message,
                        context: ServerCallContext) -> tuple[str, PreparedRun]:
        if context_id:
            check_context_id(context_id)
            waiting = await self._waiting(context_id, context)
            if waiting is not None:
                raise UnsupportedOperationError(
                    message=f"task {waiting} in context {context_id} is waiting for input: "
                            f"answer it with taskId {waiting} (or cancel it) before "
                            f"starting a new task there",
                    data={"waiting_task_id": waiting})
        else:
            context_id = uuid.uuid4().hex
        message.task_id, message.context_id = task_id, context_id  # as the task will have them
        whole = await self._takes_a2a_message()
        value = input_value(message, whole_message=whole)
        run = await self._start(context_id, context, message=value)
        run.may_reply = whole
        return context_id, run

    async def _waiting(self, context_id: str, context: ServerCallContext) -> str | None:
        """The context's task waiting for input, if the conversation still has its requests.

        Only the newest task can be waiting: a context's tasks run one after another (the
        conversation's lease) and a new one starts only once none waits. An older task still
        marked input-required was answered outside A2A (the native API); it keeps its last
        A2A state but blocks nothing, and continuing it is refused as stale by its resume
        token. So this reads the context's newest task, never its whole history.
        """
        newest = await self._store.newest_task(context_id, context)
        if newest is None or newest.status.state != a2a_pb2.TASK_STATE_INPUT_REQUIRED:
            return None
        try:
            state = await self._host.get_conversation(context_id,
                                                      principal=principal_of(context))
        except ConversationNotFoundError:
            return None
        return newest.id if set(pending_ids(newest)) & set(state.pending_requests) else None

    async def _start(self, context_id: str, context: ServerCallContext, *,
                     task_id: str | None = None, message: Any = None,
                     responses: dict[str, Any] | None = None,
                     resume_token: ResumeToken | None = None) -> PreparedRun:
        """Start the run and take its events up to the accepted input, so every refusal
        (busy, stale, a response of the wrong type, ...) happens here, before any task."""
        run: HostedRun | None = None
        try:
            started = await self._host.run(context_id, message=message, responses=responses,
                                           principal=principal_of(context),
                                           resume_token=resume_token, stream=True)
            assert isinstance(started, HostedRun)
            run = started
            events = aiter(run)
            seen: list[WorkflowEvent] = []
            async for event in events:
                seen.append(event)
                if isinstance(event, SnapshotCommittedEvent):
                    break
        except BaseException as exc:
            if run is not None:
                await run.aclose()
            raise _refusal(exc, context_id, task_id) from None
        return PreparedRun(run, events, seen, new_task=task_id is None, run_index=0)


def _refusal(exc: BaseException, context_id: str, task_id: str | None) -> BaseException:
    """The protocol error for a run that could not start (other exceptions pass as they are)."""
    if isinstance(exc, ConversationBusyError):
        return UnsupportedOperationError(
            message=f"context {context_id} is busy with another run; retry after "
                    f"{exc.retry_after:g} s",
            data={"reason": "CONTEXT_BUSY", "retry_after": exc.retry_after})
    if isinstance(exc, StaleResumeTokenError):
        return UnsupportedOperationError(
            message=f"task {task_id} was continued by another request first; read it again "
                    f"(GetTask)", data={"reason": "TASK_ALREADY_CONTINUED"})
    if isinstance(exc, InvalidMessageError | InvalidResponseError | ConversationNotFoundError
                  | TypeError | ValueError):
        return InvalidParamsError(message=str(exc))
    if isinstance(exc, HostingError | WorkflowError):
        return UnsupportedOperationError(message=str(exc))
    return exc
