"""The AG-UI endpoint: ``POST {path}`` takes a ``RunAgentInput`` and streams AG-UI events.

This module decides what a request asks of the host: everything about the thread comes from
the ``Host`` (its lineage, ``Host.turns``; the turn run, replayed or followed), everything
about the protocol from ``_input``, ``_events`` and ``_tools``, and the streams from
``_streams``. The ``runId`` is the turn's idempotency key; the client's ``tools`` are written
to the shared state (``CLIENT_TOOLS_KEY``) with every turn's input. Errors found before the
stream opens are HTTP statuses with JSON bodies; after it opens they end the stream with
``RUN_ERROR``. This module must never load a checkpoint or a session itself, nor import a
private hosting module or another adapter, and nothing it does writes a record of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ag_ui.core import Message, RunAgentInput
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from checkflow.adapters.agui._input import (
    ResumeViolation,
    ToolAnswers,
    chat_messages,
    latest_user_text,
    new_messages,
    options_from,
    resume_responses,
    resumed_results,
    tool_answers,
    wire_message,
)
from checkflow.adapters.agui._streams import Streams, error_code
from checkflow.adapters.agui._thread import turn_origin
from checkflow.adapters.agui._tools import client_tools
from checkflow.adapters.agui._writes import StateWrites
from checkflow.agents import CLIENT_TOOLS_KEY
from checkflow.errors import (
    CheckflowError,
    ConversationBusyError,
    GraphSignatureMismatchError,
    InvalidMessageError,
    InvalidResponseError,
    RequestNotPendingError,
    SnapshotNotFoundError,
    StaleResumeTokenError,
    TurnInProgressError,
)
from checkflow.hosting import (
    Host,
    HostDescription,
    HttpError,
    ReplayedTurn,
    ResumeToken,
    read_json,
    request_principal,
    sse_response,
)

__all__ = ["AGUIAdapter"]

_REFUSED_CODES: tuple[tuple[type[BaseException], str], ...] = (
    (StaleResumeTokenError, "stale_resume_token"),
    (SnapshotNotFoundError, "snapshot_not_found"),
    (InvalidResponseError, "invalid_resume_payload"),
    (InvalidMessageError, "invalid_message"),
    (GraphSignatureMismatchError, "graph_signature_mismatch"),
    (RequestNotPendingError, "already_resolved"),
)
"""Host refusals at run start that become ``RUN_STARTED`` + ``RUN_ERROR`` (nothing ran)."""


class AGUIAdapter:
    """Serves a host over AG-UI 1.0 at ``POST {path}`` (default ``/agui``), one run per request.

    ``ping_interval`` is how long an idle stream waits before a keep-alive comment.
    ``writable_state`` opts in to clients writing the workflow's shared state: it maps each
    key a client may write (in ``RunAgentInput.state``) to the type its value must decode
    as; the write is committed with the turn's input. Without it ``state`` is ignored.

    ``threadId`` is the host conversation id (scoped by the request's principal), so the
    native API shows the same conversation at ``/v1/conversations/{threadId}``.
    """

    def __init__(self, path: str = "/agui", *, ping_interval: float = 15.0,
                 writable_state: Mapping[str, Any] | None = None) -> None:
        if not path.startswith("/") or path.rstrip("/") == "":
            raise ValueError(f"the AG-UI path must be a non-root absolute path, not {path!r}")
        if ping_interval <= 0:
            raise ValueError(f"ping_interval must be positive, not {ping_interval!r}")
        self.path = path.rstrip("/")
        self.ping_interval = ping_interval
        self.writable_state = None if writable_state is None else StateWrites(writable_state)
        self.prefixes = (self.path,)
        self.name = "agui"

    def try_it(self, url: str) -> list[str]:
        """A line to try this adapter with (``serve`` prints it in its banner)."""
        run = ('{"threadId": "agui-demo", "runId": "r1", "messages": '
               '[{"id": "m1", "role": "user", "content": "cats"}]}')
        return [f"curl -s -N -X POST {url}{self.path} -H 'content-type: application/json' "
                f"-d '{run}'"]

    def routes(self, host: Host) -> list[BaseRoute]:
        """The one AG-UI route, bound to ``host``."""

        async def endpoint(request: Request) -> Response:
            return await _Run.start(host, request, self.ping_interval, self.writable_state)

        return [Route(self.path, endpoint, methods=["POST"], name="agui")]


class _Run:
    """One AG-UI request: decide what to ask the host, then hand the stream to ``Streams``."""

    def __init__(self, host: Host, body: RunAgentInput, principal: str | None) -> None:
        self.host = host
        self.body = body
        self.principal = principal
        self.streams = Streams(host, body.thread_id, body.run_id, principal)
        self._description: HostDescription | None = None

    async def describe(self) -> HostDescription:
        """The host's description, asked once per request."""
        if self._description is None:
            self._description = await self.host.describe()
        return self._description

    @classmethod
    async def start(cls, host: Host, request: Request, ping_interval: float,
                    writable: StateWrites | None = None) -> Response:
        body = await read_json(request, RunAgentInput)
        try:
            options = options_from(body.forwarded_props)
        except ValueError as exc:
            raise HttpError(422, "invalid_request", str(exc)) from exc
        run = cls(host, body, request_principal(request))
        streams = run.streams

        def respond(events: Any) -> Response:
            return sse_response(events, ping_interval=ping_interval)

        view = await streams.view()
        fresh = new_messages(body.messages, view.seen)
        committed = view.runs.get(body.run_id)
        if committed is not None:  # a retry of a committed run: its outcome, nothing runs
            if fresh:
                return respond(streams.refused(
                    "run_id_reused", f"run {body.run_id!r} already ran on this thread with "
                    f"other input; a new run needs a new runId"))
            return respond(streams.guarded(streams.replay(committed, view)))
        open_ids, tools = set(view.open), view.tools
        if options.from_snapshot is not None:
            # a branch answers the requests open at that snapshot; the host checks them there
            open_ids, tools = {entry.interrupt_id for entry in body.resume or ()}, {}
        try:
            split = (tool_answers(fresh, tools, view.issued, view.calls)
                     if options.from_snapshot is None else ToolAnswers(rest=list(fresh)))
            message = await run._message(split.rest)
            responses = resume_responses(body.resume, open_ids, view.issued,
                                         has_input=message is not None, answered=split.answers)
        except ResumeViolation as violation:
            return respond(streams.refused(violation.code, violation.message))
        if message is None and responses is None:
            return respond(streams.guarded(streams.reconnect(view)))
        taken = [*(wire_message(m) for m in fresh),
                 *resumed_results(body.resume, tools, split.answers)]
        token = None if options.resume_token is None else ResumeToken(*options.resume_token)
        shared = await run._shared_state(writable, options.from_snapshot)
        try:
            turn = await host.run(
                body.thread_id, message=message, responses=responses, principal=run.principal,
                from_snapshot=options.from_snapshot, resume_token=token, stream=True,
                idempotency_key=body.run_id, origin=turn_origin(body.run_id, taken),
                shared_state=shared or None,
            )
        except TurnInProgressError as exc:
            if exc.idempotency_key != body.run_id:
                raise
            return respond(streams.guarded(streams.attach(exc.turn_id)))  # still running
        except ConversationBusyError:
            raise  # HTTP 409 at once, through the app's error mapping
        except CheckflowError as exc:
            if not any(isinstance(exc, kind) for kind, _ in _REFUSED_CODES):
                raise
            return respond(streams.refused(error_code(exc, _REFUSED_CODES), str(exc)))
        if isinstance(turn, ReplayedTurn):  # committed meanwhile by another request
            return respond(streams.guarded(streams.replay(turn.record, await streams.view())))
        return respond(streams.run(turn, view, taken, branched=options.from_snapshot is not None,
                                   refused=_REFUSED_CODES))

    async def _shared_state(self, writable: StateWrites | None, at: str | None
                            ) -> dict[str, Any]:
        """What this turn writes of the shared state with its input: the client's writes,
        and (a workflow's) the tools the client declared for it, an empty list for none, so
        a previous run's tools are not offered again."""
        written = await self._writes(writable, at)
        if (await self.describe()).checkpoints:  # an agent keeps no shared state
            written[CLIENT_TOOLS_KEY] = client_tools(self.body.tools)
        return written

    async def _writes(self, writable: StateWrites | None, at: str | None) -> dict[str, Any]:
        """The shared-state keys this run's ``state`` writes (none unless the adapter opted
        in); ``SharedStateWriteError`` (HTTP 422) for a refused one, before anything runs."""
        state = self.body.state
        if writable is None or not state:
            return {}
        base = await self.streams.shared_state(at)
        if base is None:  # an unknown snapshot: the host refuses the run itself
            return {}
        try:
            return writable.writes(state, base)
        except ValueError as exc:
            if isinstance(exc, CheckflowError):
                raise
            raise HttpError(422, "invalid_request", str(exc), field="state") from exc

    async def _message(self, fresh: Sequence[Message]) -> Any:
        """The workflow ``message`` the new messages make, or ``None`` when nothing is new."""
        if not fresh:
            return None
        if (await self.describe()).chat_input:
            chat = chat_messages(fresh)
            return chat or None
        return latest_user_text(fresh)
