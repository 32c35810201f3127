"""The AG-UI endpoint: ``POST {path}`` takes a ``RunAgentInput`` and streams AG-UI events.

Everything about the thread comes from the ``Host`` (runs, the open interrupts, the head) and
from the adapter's own record (``_thread``); everything about the protocol from ``_input``
and ``_events``. Errors found before the stream opens are HTTP statuses with JSON bodies;
after it opens they end the stream with ``RUN_ERROR``. This module must never load a
checkpoint or a session itself, nor import a private hosting module or another adapter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from ag_ui.core import BaseEvent, Message, RunAgentInput
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from checkflow.adapters.agui._events import RunTranslator
from checkflow.adapters.agui._input import (
    ResumeViolation,
    chat_messages,
    latest_user_text,
    new_messages,
    options_from,
    resume_responses,
    wire_message,
)
from checkflow.adapters.agui._thread import NAMESPACE, ThreadRecord
from checkflow.errors import (
    CheckflowError,
    ConversationBusyError,
    ConversationNotFoundError,
    GraphSignatureMismatchError,
    InvalidMessageError,
    InvalidResponseError,
    NoCheckpointsError,
    SnapshotNotFoundError,
    StaleResumeTokenError,
)
from checkflow.hosting import (
    ConversationState,
    Host,
    HostedRun,
    HttpError,
    ResumeToken,
    ServerSentEvent,
    describe_error,
    jsonable,
    pending_view,
    read_json,
    request_principal,
    sse_response,
)
from checkflow.workflows import PendingRequest, RunStatus, inspect_snapshot

__all__ = ["AGUIAdapter"]

_REFUSED_CODES: tuple[tuple[type[BaseException], str], ...] = (
    (StaleResumeTokenError, "stale_resume_token"),
    (SnapshotNotFoundError, "snapshot_not_found"),
    (InvalidResponseError, "invalid_resume_payload"),
    (InvalidMessageError, "invalid_message"),
    (GraphSignatureMismatchError, "graph_signature_mismatch"),
)
"""Host refusals at run start that become ``RUN_STARTED`` + ``RUN_ERROR`` (nothing ran)."""


def _frame(event: BaseEvent) -> ServerSentEvent:
    return ServerSentEvent(data=event.model_dump_json(by_alias=True))


def _token_view(token: ResumeToken | None) -> dict[str, str] | None:
    if token is None:
        return None
    return {"checkpointId": token.checkpoint_id, "snapshotId": token.snapshot_id}


def _error_code(exc: BaseException) -> str:
    for kind, code in _REFUSED_CODES:
        if isinstance(exc, kind):
            return code
    _status, body, _headers = describe_error(exc)
    error = body.get("error") if isinstance(body, Mapping) else None
    native = error.get("code") if isinstance(error, Mapping) else None
    return str(native) if native else "internal_error"


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "the run failed"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class AGUIAdapter:
    """Serves a host over AG-UI 1.0 at ``POST {path}`` (default ``/agui``), one run per request.

    ``ping_interval`` is how long an idle stream waits before a keep-alive comment.

    ``threadId`` is the host conversation id (scoped by the request's principal), so the
    native API shows the same conversation at ``/v1/conversations/{threadId}``.
    """

    def __init__(self, path: str = "/agui", *, ping_interval: float = 15.0) -> None:
        if not path.startswith("/") or path.rstrip("/") == "":
            raise ValueError(f"the AG-UI path must be a non-root absolute path, not {path!r}")
        if ping_interval <= 0:
            raise ValueError(f"ping_interval must be positive, not {ping_interval!r}")
        self.path = path.rstrip("/")
        self.ping_interval = ping_interval
        self.prefixes = (self.path,)
        self.name = "agui"

    def routes(self, host: Host) -> list[BaseRoute]:
        """The one AG-UI route, bound to ``host``."""

        async def endpoint(request: Request) -> Response:
            return await _Run.start(host, request, self.ping_interval)

        return [Route(self.path, endpoint, methods=["POST"], name="agui")]


class _Run:
    """One AG-UI request: decide what to ask the host, then stream the run's events."""

    def __init__(self, host: Host, body: RunAgentInput, principal: str | None) -> None:
        self.host = host
        self.body = body
        self.principal = principal
        self.translator = RunTranslator(body.thread_id, body.run_id, to_json=jsonable)
        self.thread = ThreadRecord(body.thread_id, principal)

    @classmethod
    async def start(cls, host: Host, request: Request, ping_interval: float) -> Response:
        body = await read_json(request, RunAgentInput)
        try:
            options = options_from(body.forwarded_props)
        except ValueError as exc:
            raise HttpError(422, "invalid_request", str(exc)) from exc
        run = cls(host, body, request_principal(request))
        records = host.records(NAMESPACE)
        run.thread = await ThreadRecord.load(records, body.thread_id, run.principal)
        fresh = new_messages(body.messages, run.thread.seen)
        if fresh:
            run.thread.check_room(records, sum(len(m.model_dump_json()) for m in fresh))
        message = await run._message(fresh)
        state = await run._conversation()
        open_ids: set[str] = set() if state is None else set(state.pending_requests)
        if options.from_snapshot is not None:
            # a branch answers the requests open at that snapshot; the host checks them there
            open_ids = {entry.interrupt_id for entry in body.resume or ()}
        try:
            responses = resume_responses(
                body.resume, open_ids, run.thread.issued, has_input=message is not None
            )
        except ResumeViolation as violation:
            return sse_response(run._refused(violation.code, violation.message),
                                ping_interval=ping_interval)
        if message is None and responses is None:
            return sse_response(run._replay(state), ping_interval=ping_interval)
        token = None if options.resume_token is None else ResumeToken(*options.resume_token)
        try:
            stream = await host.run(
                body.thread_id, message=message, responses=responses, principal=run.principal,
                from_snapshot=options.from_snapshot, resume_token=token, stream=True,
            )
        except ConversationBusyError:
            raise  # HTTP 409 at once, through the app's error mapping
        except CheckflowError as exc:
            if not any(isinstance(exc, kind) for kind, _ in _REFUSED_CODES):
                raise
            return sse_response(run._refused(_error_code(exc), str(exc)),
                                ping_interval=ping_interval)
        return sse_response(run._stream(stream), ping_interval=ping_interval)

    async def _message(self, fresh: Sequence[Message]) -> Any:
        """The workflow ``message`` the new messages make, or ``None`` when nothing is new."""
        if not fresh:
            return None
        description = await self.host.describe()
        if description.chat_input:
            chat = chat_messages(fresh)
            return chat or None
        return latest_user_text(fresh)

    async def _conversation(self) -> ConversationState | None:
        try:
            return await self.host.get_conversation(self.body.thread_id, principal=self.principal)
        except (ConversationNotFoundError, NoCheckpointsError):
            return None

    async def _shared_state(self, state: ConversationState | None) -> dict[str, Any] | None:
        """The workflow's shared state at the conversation's head (none for an agent host)."""
        if state is None or state.checkpoint is None or state.resume_token is None:
            return None
        snapshot = state.checkpoint.get_snapshot(state.resume_token.snapshot_id)
        shared = jsonable(inspect_snapshot(snapshot).shared_state)
        return shared if isinstance(shared, dict) else None

    def _input_messages(self) -> list[dict[str, Any]]:
        return [wire_message(m) for m in self.body.messages]

    # -- the streams -------------------------------------------------------------------------

    async def _refused(self, code: str, message: str) -> AsyncIterator[ServerSentEvent]:
        yield _frame(self.translator.started())
        for event in self.translator.error(code, message):
            yield _frame(event)

    async def _replay(self, state: ConversationState | None) -> AsyncIterator[ServerSentEvent]:
        """Nothing new and nothing to resume: the thread as it stands, its interrupts open."""
        yield _frame(self.translator.started())
        transcript, _ = self.thread.merged(self._input_messages(), ())
        status = RunStatus.IDLE if state is None else state.status
        pending = () if state is None else state.pending_requests.values()
        token = None if state is None else state.resume_token
        for event in self.translator.finish(
            status if status is RunStatus.AWAITING_RESPONSES else RunStatus.IDLE,
            pending=[pending_view(p) for p in pending],
            resume_token=_token_view(token),
            transcript=transcript,
            state=await self._shared_state(state),
        ):
            yield _frame(event)

    async def _stream(self, stream: HostedRun) -> AsyncIterator[ServerSentEvent]:
        yield _frame(self.translator.started())
        completed = False
        try:
            async for event in stream:
                for translated in self.translator.translate(event):
                    yield _frame(translated)
            result = await stream.get_result()
            completed = True
        except Exception as exc:  # after the stream opened, every failure is a RUN_ERROR
            for translated in self.translator.error(_error_code(exc), _describe(exc)):
                yield _frame(translated)
            return
        finally:
            if not completed:
                await stream.aclose()  # a client that left cancels at the next safe point
        if result.status is RunStatus.FAILED:
            for translated in self.translator.error("workflow_failed", _describe(result.error)):
                yield _frame(translated)
            return
        pending = list(result.pending_requests.values())
        ending = await self._ending(result.status, pending, result.resume_token)
        for translated in ending:
            yield _frame(translated)

    async def _ending(
        self, status: RunStatus, pending: Iterable[PendingRequest], token: ResumeToken | None
    ) -> list[BaseEvent]:
        """Record what the thread took in and produced, then the run's final events."""
        views = [pending_view(p) for p in pending]
        transcript, _ = self.thread.merged(self._input_messages(), ())
        produced = [*self._input_messages(), *self.translator.messages]
        issued = [str(v["request_id"]) for v in views]
        try:
            await self.thread.record(self.host.records(NAMESPACE), produced, issued)
        except CheckflowError as exc:  # the run committed; say so rather than end mid-stream
            return self.translator.error(
                "thread_record_failed",
                f"the run committed, but its messages could not be recorded as seen "
                f"(a resend may feed them again): {_describe(exc)}",
            )
        shared = await self._shared_state(await self._conversation())
        return self.translator.finish(
            status, pending=views, resume_token=_token_view(token), transcript=transcript,
            state=shared,
        )
