"""``FoundryAdapter``: the Responses routes, their OpenAI-shaped errors and the container hooks.

Routes: ``POST /responses``, ``GET|DELETE /responses/{id}``, ``GET /responses/{id}/input_items``,
``POST /responses/{id}/cancel`` and ``GET /readiness``. Each handler reads the request, asks
the ``ResponsesService`` and writes JSON or server-sent events; every error, the adapter's
own and the host's, leaves as ``{"error": {"message", "type", "param", "code"}}``. This
module must never decide what a response means; the service and the plan do.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from checkflow.adapters.foundry._container import ContainerEnvironment
from checkflow.adapters.foundry._errors import ResponsesError, error_body, param_from_validation
from checkflow.adapters.foundry._events import Event
from checkflow.adapters.foundry._service import ResponsesService
from checkflow.adapters.foundry._wire import CreateResponseBody, parse_request
from checkflow.errors import (
    CheckflowError,
    InvalidMessageError,
    InvalidResponseError,
)
from checkflow.hosting import (
    Host,
    HttpError,
    ServerSentEvent,
    describe_error,
    json_response,
    read_json,
    request_principal,
    sse_response,
)

__all__ = ["SESSION_HEADER", "USER_HEADER", "FoundryAdapter", "header_principal"]

USER_HEADER = "x-agent-user-id"
"""The header a Foundry hosted-agent container receives naming the calling user."""
SESSION_HEADER = "x-agent-session-id"
"""The header naming the platform's session; used as the conversation id of a new response."""
IDEMPOTENCY_HEADER = "idempotency-key"
"""The header whose value makes a create happen once (the ``openai`` client does not send it
on its own: pass it in ``extra_headers``)."""

_log = logging.getLogger("checkflow.adapters.foundry")
Handler = Callable[[Request, Exception], Awaitable[Response]]


def header_principal(request: Request) -> str | None:
    """The principal a Foundry container trusts: the ``x-agent-user-id`` header, if sent.

    Install it as the app's principal hook only where the platform in front sets the
    header (``serve --foundry`` without ``--authenticate``); anywhere else a client could
    name any principal it likes.
    """
    value = request.headers.get(USER_HEADER, "").strip()
    return value or None


def _openai(status: int, message: str, *, param: str | None = None, code: str | None = None,
            type: str | None = None, headers: Mapping[str, str] | None = None) -> Response:
    kind = type or ("server_error" if status >= 500 else "invalid_request_error")
    return json_response(error_body(message, type=kind, param=param, code=code), status,
                         dict(headers or {}))


async def _responses_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ResponsesError)
    return _openai(exc.status, exc.message, param=exc.param, code=exc.code, type=exc.type,
                   headers=exc.headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HttpError)
    if exc.status == 422:  # a schema violation: the protocol says 400, naming the field
        return _openai(400, exc.message, param=param_from_validation(exc.message),
                       code="invalid_value")
    return _openai(exc.status, exc.message, code=exc.code)


async def _starlette_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = "not_found" if exc.status_code == 404 else None
    return _openai(exc.status_code, str(exc.detail), code=code, headers=exc.headers)


async def _host_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, InvalidMessageError):
        return _openai(400, str(exc), param="input", code="invalid_value")
    if isinstance(exc, InvalidResponseError):
        return _openai(400, str(exc), param="input", code="invalid_function_call_output")
    status, body, headers = describe_error(exc)
    error = body.get("error", {}) if isinstance(body, dict) else {}
    return _openai(status, str(error.get("message", exc)), code=error.get("code"),
                   headers=headers)


async def _sse(events: AsyncIterator[Event]) -> AsyncIterator[ServerSentEvent]:
    async for event in events:
        yield ServerSentEvent(data=event, event=event["type"])


def _int_query(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ResponsesError(400, f"{name} must be an integer, not {raw!r}", param=name,
                             code="invalid_value") from None
    if not low <= value <= high:
        raise ResponsesError(400, f"{name} must be between {low} and {high}, not {value}",
                             param=name, code="invalid_value")
    return value


async def _unexpected(request: Request, exc: Exception) -> Response:
    _log.error("unhandled error while serving %s", request.url.path, exc_info=exc)
    return _openai(500, "internal server error", type="server_error")


class FoundryAdapter:
    """The Responses protocol of Foundry hosted agents, at the server root.

    ``container=True`` applies the hosted-agent container contract: a request without an
    authenticated principal is attributed to its ``x-agent-user-id`` header; a new response
    without ``conversation`` or ``previous_response_id`` runs in the conversation its session
    names (``agent_session_id`` in the body, else the ``x-agent-session-id`` header, else
    ``FOUNDRY_AGENT_SESSION_ID``); every response says its session (``agent_session_id`` and
    the ``x-agent-session-id`` header) and its agent (``agent_reference``, from
    ``FOUNDRY_AGENT_NAME`` and ``FOUNDRY_AGENT_VERSION``). ``max_body_bytes`` (default: the
    app's limit) bounds a create request's body.
    """

    name = "foundry"
    prefixes = ("/responses", "/readiness")

    def __init__(self, *, container: bool = False, max_body_bytes: int | None = None) -> None:
        self.container = container
        self.max_body_bytes = max_body_bytes
        self.exception_handlers: dict[Any, Handler] = {
            ResponsesError: _responses_error,
            HttpError: _http_error,
            HTTPException: _starlette_error,
            CheckflowError: _host_error,
            Exception: _unexpected,
        }

    def try_it(self, url: str) -> list[str]:
        """A line to try this adapter with (``serve`` prints it in its banner)."""
        return [f"curl -s -X POST {url}/responses -H 'content-type: application/json' "
                "-d '{\"input\": \"cats\"}'"]

    def _principal(self, request: Request) -> str | None:
        principal = request_principal(request)
        if principal is None and self.container:
            return header_principal(request)
        return principal

    def routes(self, host: Host) -> list[BaseRoute]:
        """The Responses routes for ``host`` (a ``WorkflowHost`` or an ``AgentHost``)."""
        environment = ContainerEnvironment.read() if self.container else None
        service = ResponsesService(host, environment)

        def session(request: Request, sent: str | None) -> str | None:
            """The container session of a create: ``agent_session_id``, else the header,
            else the container's own (``FOUNDRY_AGENT_SESSION_ID``); none outside one."""
            if environment is None:
                return None
            header = request.headers.get(SESSION_HEADER, "").strip()
            return sent or header or environment.session_id

        def session_headers(found: str | None) -> dict[str, str]:
            return {SESSION_HEADER: found} if found is not None else {}

        def headers_of(body: Mapping[str, Any]) -> dict[str, str]:
            found = body.get("agent_session_id")
            return session_headers(found if isinstance(found, str) else None)

        async def create(request: Request) -> Response:
            body = await read_json(request, CreateResponseBody,
                                   max_body_bytes=self.max_body_bytes)
            parsed = parse_request(body)
            key = request.headers.get(IDEMPOTENCY_HEADER, "").strip()
            plan = await service.plan(parsed, principal=self._principal(request),
                                      session_hint=session(request, parsed.agent_session_id),
                                      key_header=key or None)
            headers = session_headers(plan.origin.agent_session_id)
            if parsed.background:
                started = await service.create_background(plan)
                if not parsed.stream:
                    return json_response(started, headers=headers_of(started))
                return sse_response(_sse(await service.replay(started["id"], plan.principal,
                                                              -1)), headers=headers)
            if parsed.stream:
                return sse_response(_sse(await service.create_stream(plan)), headers=headers)
            created = await service.create(plan)
            return json_response(created, headers=headers_of(created))

        async def retrieve(request: Request) -> Response:
            response_id = request.path_params["response_id"]
            principal = self._principal(request)
            if request.query_params.get("stream", "false").lower() == "true":
                # events are numbered from 0: the default -1 replays them all (as Foundry's)
                after = _int_query(request, "starting_after", -1, -1, 2**62)
                view, _ = await service.load(response_id, principal)
                return sse_response(_sse(await service.replay(response_id, principal, after)),
                                    headers=session_headers(view.origin.agent_session_id))
            found = await service.retrieve(response_id, principal)
            return json_response(found, headers=headers_of(found))

        async def delete(request: Request) -> Response:
            return json_response(await service.delete(request.path_params["response_id"],
                                                      self._principal(request)))

        async def cancel(request: Request) -> Response:
            cancelled = await service.cancel(request.path_params["response_id"],
                                             self._principal(request))
            return json_response(cancelled, headers=headers_of(cancelled))

        async def input_items(request: Request) -> Response:
            order = request.query_params.get("order", "desc")
            if order not in ("asc", "desc"):
                raise ResponsesError(400, f"order must be 'asc' or 'desc', not {order!r}",
                                     param="order", code="invalid_value")
            page = await service.input_items(
                request.path_params["response_id"], self._principal(request),
                after=request.query_params.get("after"),
                limit=_int_query(request, "limit", 20, 1, 100), order=order)
            return json_response(page)

        async def readiness(request: Request) -> Response:
            try:
                await host.check_ready()
            except Exception as exc:
                return json_response({"status": "unhealthy", "error": str(exc)}, 503)
            return json_response({"status": "healthy"})

        return [
            Route("/responses", create, methods=["POST"]),
            Route("/responses/{response_id}", retrieve, methods=["GET"]),
            Route("/responses/{response_id}", delete, methods=["DELETE"]),
            Route("/responses/{response_id}/cancel", cancel, methods=["POST"]),
            Route("/responses/{response_id}/input_items", input_items, methods=["GET"]),
            Route("/readiness", readiness, methods=["GET"]),
        ]
