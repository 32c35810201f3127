"""The gate every ``SendMessage`` passes: protocol rules, then the host turn is started.

It runs inside the SDK's request setup (as its ``RequestContextBuilder``), before the SDK
creates or touches a task, so a refusal is a plain protocol error and nothing is stored:

- ``contextId`` is the host conversation id (scoped by principal); one that cannot be used
  is refused, never replaced; without one a new context is made.
- ``messageId`` is the turn's idempotency key: a retry of a committed turn is answered with
  its task (``Replayed``: nothing runs), a retry of a running one follows it (``Attach``).
- a message with ``taskId`` continues that task: only an input-required one, with the answers
  ``_answers`` reads from it (a data part mapping request ids to values, one value, or the
  whole message for a request that takes ``A2AMessage``); the task's resume token goes with
  it, so of two racing continuations exactly one wins. A reply to a request the task already
  had answered is refused (``already_answered``), never a fork.
- a message without ``taskId`` while a task of the context awaits input is refused naming it;
  ``metadata.checkflow.fromSnapshot`` is the one way to branch: a new task from that snapshot.
- a busy conversation is refused at once (the host's lease), never queued.

``Host.run`` returns only once the engine accepted the input (or raises its refusal), so the
started turn is handed to the executor as it is. This module never enqueues events and never
writes anything: the turn's origin (task id, the message as sent) is committed with its first
snapshot by the host.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from a2a.server.agent_execution import RequestContext, RequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.types import a2a_pb2
from a2a.utils.errors import (
    InvalidParamsError,
    InvalidRequestError,
    UnsupportedOperationError,
)

from checkflow.adapters.a2a._answers import (
    already_answered,
    answered_ids,
    data_part,
    responses_for,
)
from checkflow.adapters.a2a._executor import HostExecutor, PreparedRun
from checkflow.adapters.a2a._ids import (
    MAX_ID,
    TERMINAL,
    check_message_id,
    principal_of,
    task_id_for,
)
from checkflow.adapters.a2a._metadata import (
    BRANCH_KEY,
    client_meta,
    error_data,
    resume_token_of,
)
from checkflow.adapters.a2a._parts import input_value
from checkflow.adapters.a2a._store import A2ATaskStore
from checkflow.adapters.a2a._view import TASK_KEY, origin_data, task_turns
from checkflow.errors import (
    ConversationBusyError,
    ConversationNotFoundError,
    HostingError,
    InvalidMessageError,
    InvalidResponseError,
    RecordTooLargeError,
    RequestNotPendingError,
    SnapshotNotFoundError,
    StaleResumeTokenError,
    TurnInProgressError,
    WorkflowError,
)
from checkflow.hosting import Host, ResumeToken, Turn, TurnOrigin, TurnRecord

__all__ = ["ATTEMPTS", "BLOCKING", "Attach", "Replayed", "RunGate", "check_context_id"]

ATTEMPTS: contextvars.ContextVar[list[tuple[str, PreparedRun]]] = contextvars.ContextVar(
    "checkflow_a2a_attempts")
"""The runs one request prepared, so the handler closes those the SDK never executed."""

BLOCKING: contextvars.ContextVar[bool] = contextvars.ContextVar("checkflow_a2a_blocking",
                                                                default=False)
"""Whether the request is a blocking ``SendMessage`` (the only one a direct reply answers)."""

PROTOCOL = "a2a"


class Replayed(Exception):
    """A retried ``messageId`` whose turn is recorded: answer with ``task_id`` as it is."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


class Attach(Exception):
    """A retried ``messageId`` whose turn still runs: follow ``task_id`` instead."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


def check_context_id(context_id: str) -> None:
    """Refuse a client ``contextId`` the native API could not address as a path segment."""
    if (len(context_id) > MAX_ID or "/" in context_id
            or any(ord(c) < 32 or ord(c) == 127 for c in context_id)):
        raise InvalidParamsError(
            message=f"contextId {context_id[:80]!r} cannot be used: it must be at most "
                    f"{MAX_ID} characters without '/' or control characters")


def _state_name(task: a2a_pb2.Task) -> str:
    return str(a2a_pb2.TaskState.Name(task.status.state))


def _branch(message: a2a_pb2.Message) -> str | None:
    """The snapshot ``metadata.checkflow.fromSnapshot`` names (the explicit branch)."""
    meta = client_meta(message)
    if BRANCH_KEY not in meta:
        return None
    snapshot = meta[BRANCH_KEY]
    if not isinstance(snapshot, str) or not snapshot:
        raise InvalidParamsError(
            message=f"metadata.checkflow.{BRANCH_KEY} must name a snapshot id (a string)")
    return snapshot


def _waiting(lineage: Sequence[TurnRecord]) -> str | None:
    """The task the context waits on: its last turn is a task's, paused."""
    if not lineage or not lineage[-1].pending_requests:
        return None
    return next((task_id for task_id, turns in task_turns(lineage).items()
                 if turns[-1] is lineage[-1]), None)


class RunGate(RequestContextBuilder):
    """Applies the mapping's rules to a ``SendMessage`` and starts its host turn."""

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
        """Check the request, start its turn, and name the task the turn belongs to."""
        if params is None:
            raise InvalidRequestError(message="SendMessage needs a message")
        message = params.message
        if not message.message_id:
            message.message_id = uuid.uuid4().hex
        check_message_id(message.message_id)
        branch = _branch(message)
        if task_id:
            if branch is not None:
                raise InvalidParamsError(
                    message=f"metadata.checkflow.{BRANCH_KEY} starts a new task: send it "
                            f"without taskId")
            context_id, run = await self._continue(task_id, message, context)
        else:
            context_id, task_id, run = await self._new_task(context_id, message, branch,
                                                            context)
        attempts = ATTEMPTS.get(None)
        if attempts is not None:
            attempts.append((task_id, run))
        self._executor.prepare(task_id, run)
        return RequestContext(call_context=context, request=params, task_id=task_id,
                              context_id=context_id, task=task)

    async def _continue(self, task_id: str, message: a2a_pb2.Message,
                        context: ServerCallContext) -> tuple[str, PreparedRun]:
        view = await self._store.require(task_id, context)
        current, context_id = view.task, view.task.context_id
        if current.status.state != a2a_pb2.TASK_STATE_INPUT_REQUIRED:
            await self._replay_of(context_id, task_id, message.message_id, context)
            late = answered_ids(view, message)
            if late:
                raise already_answered(task_id, late, _state_name(current))
            if current.status.state in TERMINAL:
                raise UnsupportedOperationError(
                    message=f"task {task_id} is {_state_name(current)} and takes no more "
                            f"messages; send one without taskId to start a new task in "
                            f"context {context_id}")
            raise UnsupportedOperationError(
                message=f"task {task_id} is {_state_name(current)}: it is not waiting for "
                        f"input (subscribe to it, or cancel it)")
        message.context_id = context_id  # as the task has it (a whole-message answer shows it)
        responses = responses_for(view, message)
        run = await self._start(context_id, task_id, message, context, responses=responses,
                                resume_token=resume_token_of(current), new_task=False)
        run.run_index = len(view.turns)
        self._store.announce(task_id, view)  # the SDK continues the task as it was
        return context_id, run

    async def _replay_of(self, context_id: str, task_id: str, key: str,
                         context: ServerCallContext) -> None:
        """A retry of a continuation of a task that is no longer waiting: its turn's task."""
        found = await self._host.find_turn(context_id, idempotency_key=key,
                                           principal=principal_of(context))
        if found is None or found.data.get(TASK_KEY) != task_id:
            return
        if found.state == "running":
            raise Attach(task_id)
        if found.state == "committed":
            raise Replayed(task_id)

    async def _new_task(self, context_id: str | None, message: a2a_pb2.Message,
                        branch: str | None, context: ServerCallContext
                        ) -> tuple[str, str, PreparedRun]:
        token: ResumeToken | None = None
        if context_id:
            check_context_id(context_id)
            if branch is None:
                token = await self._check_context(context_id, message.message_id, context)
        else:
            context_id = uuid.uuid4().hex
        task_id = task_id_for(context_id, message.message_id)
        message.task_id, message.context_id = task_id, context_id  # as the task will have them
        answers = None if branch is None else await self._branch_answers(
            context_id, branch, message, context)
        whole = await self._takes_a2a_message()
        value = None if answers is not None else input_value(message, whole_message=whole)
        run = await self._start(context_id, task_id, message, context, value=value,
                                responses=answers, from_snapshot=branch, resume_token=token)
        run.may_reply = whole and answers is None and BLOCKING.get()
        self._store.announce(task_id, None)  # to the SDK it is new: the relay announces it
        return context_id, task_id, run

    async def _branch_answers(self, context_id: str, snapshot: str, message: a2a_pb2.Message,
                              context: ServerCallContext) -> dict[str, Any] | None:
        """A branch from a pause whose data part maps its request ids: those answers (else
        the message is the new task's input, from that snapshot)."""
        data = data_part(message)
        if data is None:
            return None
        try:
            lineage = await self._host.turns(context_id, principal=principal_of(context))
        except ConversationNotFoundError:
            return None
        paused = next((t for t in lineage if t.last_snapshot_id == snapshot), None)
        if paused is None or not paused.pending_requests or not set(data) <= set(
                paused.pending_requests):
            return None
        return dict(data)

    async def _check_context(self, context_id: str, key: str, context: ServerCallContext
                             ) -> ResumeToken | None:
        """The waiting-task rule (a retry passes it: it is answered as recorded); the head
        the new task must start from."""
        try:
            lineage = await self._host.turns(context_id, principal=principal_of(context))
        except ConversationNotFoundError:
            return None
        for turn in lineage:
            if turn.idempotency_key == key and isinstance(turn.data.get(TASK_KEY), str):
                raise Replayed(str(turn.data[TASK_KEY]))
        waiting = _waiting(lineage)
        if waiting is not None:
            raise UnsupportedOperationError(
                message=f"task {waiting} in context {context_id} is waiting for input: "
                        f"answer it with taskId {waiting} (or cancel it) before "
                        f"starting a new task there",
                data=error_data(waiting_task_id=waiting))
        last = lineage[-1] if lineage else None
        if last is None or not last.checkpoint_id or not last.last_snapshot_id:
            return None
        return ResumeToken(last.checkpoint_id, last.last_snapshot_id)

    async def _start(self, context_id: str, task_id: str, message: a2a_pb2.Message,
                     context: ServerCallContext, *, value: Any = None,
                     responses: dict[str, Any] | None = None,
                     from_snapshot: str | None = None,
                     resume_token: ResumeToken | None = None,
                     new_task: bool = True) -> PreparedRun:
        """Start the turn; every refusal (busy, stale, already answered, a response of the
        wrong type, ...) is raised by ``Host.run`` here, before any task exists."""
        origin = TurnOrigin(PROTOCOL, origin_data(task_id, message))
        try:
            turn = await self._host.run(
                context_id, message=value, responses=responses,
                principal=principal_of(context), from_snapshot=from_snapshot,
                resume_token=resume_token, idempotency_key=message.message_id,
                origin=origin, stream=True)
        except TurnInProgressError:
            raise Attach(task_id) from None
        except BaseException as exc:
            raise _refusal(exc, context_id, task_id) from None
        record = getattr(turn, "record", None)
        if turn.replayed and isinstance(record, TurnRecord):
            await turn.aclose()
            raise Replayed(str(record.data.get(TASK_KEY) or task_id))
        assert isinstance(turn, Turn)
        return PreparedRun(turn, new_task=new_task, run_index=0)


def _refusal(exc: BaseException, context_id: str, task_id: str) -> BaseException:
    """The protocol error for a turn that could not start (other exceptions pass as they
    are)."""
    if isinstance(exc, StaleResumeTokenError):
        return UnsupportedOperationError(
            message=f"context {context_id} moved on before task {task_id} could start or "
                    f"continue (another request was first); read it again (GetTask)",
            data=error_data(reason="TASK_ALREADY_CONTINUED"))
    if isinstance(exc, ConversationBusyError):
        return UnsupportedOperationError(
            message=f"context {context_id} is busy with another run; retry after "
                    f"{exc.retry_after:g} s",
            data=error_data(reason="CONTEXT_BUSY", retry_after=exc.retry_after))
    if isinstance(exc, RequestNotPendingError):
        return already_answered(task_id, exc.request_ids)
    if isinstance(exc, RecordTooLargeError):
        return InvalidRequestError(message=str(exc), data=error_data(
            reason="record_too_large", size=exc.size, limit=exc.limit))
    if isinstance(exc, InvalidResponseError) and exc.request_id:
        # a value that does not fit (a bad approval, edited tool arguments the tool refuses):
        # nothing was committed, the task still waits for that request
        where = {"field": exc.field} if exc.field else {}
        return InvalidParamsError(message=str(exc), data=error_data(
            reason="invalid_response", request_ids=[exc.request_id], **where))
    if isinstance(exc, InvalidMessageError | InvalidResponseError | ConversationNotFoundError
                  | SnapshotNotFoundError | TypeError | ValueError):
        return InvalidParamsError(message=str(exc))
    if isinstance(exc, HostingError | WorkflowError):
        return UnsupportedOperationError(message=str(exc))
    return exc
