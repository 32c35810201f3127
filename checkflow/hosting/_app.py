"""The Starlette app ``create_app`` builds: composed of health routes, the native API and adapters.

The native API (JSON, SSE for streams) is a thin translation onto the ``Host``: parse and
bound the body, resolve the principal, call the host, render the fixed JSON shapes. Errors
become answers through the app's exception handlers (one mapping, ``_http``), so handlers just
raise. Adapters contribute their routes through the ``Adapter`` protocol; each is mounted as a
sub-app of its own under its prefixes (``_mounts``). This module must never hold conversation
state or decide concurrency: the host does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from checkflow.agents import ChatMessage
from checkflow.errors import CheckflowError, InvalidConversationIdError
from checkflow.hosting._adapter import (
    Adapter,
    adapter_body_limit,
    adapter_exception_handlers,
    adapter_lifespan,
    adapter_prefixes,
    adapter_public,
)
from checkflow.hosting._agent_host import AgentHost
from checkflow.hosting._bounds import BodyGuard, BodyLimits, Refusal
from checkflow.hosting._factory import Authenticate, request_principal
from checkflow.hosting._http import (
    HttpError,
    describe_error,
    error_response,
    json_response,
    read_json,
)
from checkflow.hosting._inspect import snapshot_detail
from checkflow.hosting._mounts import PrefixMount, check_prefixes, check_routes_within, covers
from checkflow.hosting._native_pages import conversation_page, page_params, snapshot_page
from checkflow.hosting._openapi import (
    AgentRunRequest,
    ChatMessageBody,
    RunRequest,
    openapi_document,
    with_adapter_routes,
)
from checkflow.hosting._protocol import Host
from checkflow.hosting._runs import HostedRun
from checkflow.hosting._sse import ServerSentEvent, sse_response
from checkflow.hosting._views import event_view, jsonable, run_view

__all__ = ["build_app"]

_OPEN_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json"})
NATIVE_PREFIXES = ("/v1", "/healthz", "/readyz", "/openapi.json")
"""The paths the native API owns; no adapter may mount under them."""


class _PrincipalMiddleware:
    """Resolves the principal of every request but the health probes; 401 without one."""

    def __init__(self, app: ASGIApp, authenticate: Authenticate,
                 public: Sequence[Callable[[str], bool]] = ()) -> None:
        self.app = app
        self.authenticate = authenticate
        self.public = tuple(public)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in _OPEN_PATHS or any(
                is_public(scope["path"]) for is_public in self.public):
            await self.app(scope, receive, send)
            return
        principal = self.authenticate(Request(scope, receive))
        if inspect.isawaitable(principal):
            principal = await principal
        if principal is None:
            response = error_response(HttpError(401, "unauthorized", "authentication required"))
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


_NATIVE_PREFIX = "/v1/conversations/"
class _SegmentConvertor(Convertor[str]):
    """One path segment, possibly empty (so an empty id is refused by name, not a 404)."""

    regex = "[^/]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("checkflow_segment", _SegmentConvertor())
# One segment: an id's own "/" arrives encoded (%2F), so ``GET .../e1/runs`` is a 405 of the
# runs route, never conversation "e1/runs".
_BASE = _NATIVE_PREFIX + "{conversation_id:checkflow_segment}"


class _EncodedNativePaths:
    """Routes native API paths on their percent-encoded form, so any id is unambiguous.

    Servers decode ``%2F`` into ``/`` before routing, which would make a conversation id
    like ``x/snapshots`` look like a route. Under the native prefix the raw path is routed
    instead, and handlers decode each parameter themselves.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if raw and b"%" in raw and scope["path"].startswith(_NATIVE_PREFIX):  # else the same
            scope = {**scope, "path": raw.split(b"?", 1)[0].decode("ascii", "replace")}
        await self.app(scope, receive, send)


def _param(request: Request, name: str) -> str:
    """A path parameter, percent-decoded strictly: bytes that are not UTF-8 are refused."""
    try:
        return urllib.parse.unquote_to_bytes(str(request.path_params[name])).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidConversationIdError(
            f"{name} is not valid percent-encoded UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def _conversation_id(request: Request) -> str:
    return _param(request, "conversation_id")


def _workflow_routes(host: Host, max_body_bytes: int, on_disconnect: str) -> list[BaseRoute]:
    detached: set[asyncio.Task[Any]] = set()  # runs that outlive their stream ("continue")

    async def run(request: Request) -> Response:
        body = await read_json(request, RunRequest, max_body_bytes=max_body_bytes)
        if body.message is not None and body.responses is not None:
            raise HttpError(422, "invalid_request", "give `message` or `responses`, not both")
        conversation_id = _conversation_id(request)
        options: dict[str, Any] = {
            "message": body.message,
            "responses": body.responses,
            "principal": request_principal(request),
            "from_snapshot": body.from_snapshot,
            "resume_token": body.resume_token,
            "idempotency_key": idempotency_key(request),
        }
        if request.query_params.get("stream", "").lower() in ("1", "true", "yes"):
            stream = await host.run(conversation_id, stream=True, **options)
            assert isinstance(stream, HostedRun)
            if on_disconnect == "continue":
                return sse_response(_detached_sse(host, stream, conversation_id,
                                                  request_principal(request), detached))
            return sse_response(_sse(stream))
        # One loop turn between reading a request and running it: the loop then runs the
        # requests it read together stage by stage, the same code for many in a row. Measured
        # with bench/hosting.py (memory:, uvloop): about 0.035 ms less CPU per conversation at
        # 32 clients, 0.01 more at 8; a second turn (after the lease) gained nothing more.
        await asyncio.sleep(0)
        result = await host.run(conversation_id, **options)
        return json_response(run_view(result))

    async def get_conversation(request: Request) -> Response:
        state = await host.get_conversation(
            _conversation_id(request), principal=request_principal(request))
        return json_response(run_view(state))

    async def list_snapshots(request: Request) -> Response:
        limit, cursor = page_params(request.query_params)
        checkpoint, token = await host.get_checkpoint(
            _conversation_id(request), principal=request_principal(request))
        return json_response(snapshot_page(checkpoint, token, limit, cursor))

    async def list_conversations(request: Request) -> Response:
        limit, cursor = page_params(request.query_params)
        return json_response(await conversation_page(
            host, request_principal(request), limit, cursor))

    async def get_snapshot(request: Request) -> Response:
        checkpoint, token = await host.get_checkpoint(
            _conversation_id(request), principal=request_principal(request))
        snapshot = checkpoint.get_snapshot(_param(request, "snapshot_id"))
        return json_response(snapshot_detail(snapshot, token.snapshot_id))

    return [
        *_conversation_routes(host, run),
        Route(_BASE + "/snapshots/{snapshot_id}", get_snapshot, methods=["GET"]),
        Route(_BASE + "/snapshots", list_snapshots, methods=["GET"]),
        Route(_BASE, get_conversation, methods=["GET"]),
        Route("/v1/conversations", list_conversations, methods=["GET"]),
    ]


def _conversation_routes(
    host: Host, run: Callable[[Request], Awaitable[Response]]
) -> list[BaseRoute]:
    """``POST .../runs`` with ``run`` and ``DELETE`` of the conversation, for either host."""

    async def delete_conversation(request: Request) -> Response:
        await host.delete(_conversation_id(request), principal=request_principal(request))
        return Response(status_code=204)

    async def cancel(request: Request) -> Response:
        cancelled = await host.cancel(_conversation_id(request),
                                      principal=request_principal(request))
        return json_response({"conversation_id": _conversation_id(request),
                              "cancelled": cancelled})

    async def events(request: Request) -> Response:
        after_text = request.query_params.get("after")
        try:
            after = None if after_text is None else int(after_text)
        except ValueError:
            raise HttpError(400, "invalid_request",
                            f"after must be an event sequence number, not {after_text!r}"
                            ) from None
        followed = host.follow(_conversation_id(request),
                               principal=request_principal(request), after=after)
        return sse_response(_followed(followed))

    return [
        Route(_BASE + "/runs", run, methods=["POST"]),
        Route(_BASE + "/cancel", cancel, methods=["POST"]),
        Route(_BASE + "/events", events, methods=["GET"]),
        Route(_BASE, delete_conversation, methods=["DELETE"]),
    ]


async def _followed(events: AsyncIterator[Any]) -> AsyncIterator[ServerSentEvent]:
    """A subscription as server-sent events (``id`` = the run's sequence)."""
    async for event in events:
        yield ServerSentEvent(event_view(event), event=type(event).__name__, id=event.sequence)


async def _detached_sse(
    host: Host, stream: HostedRun, conversation_id: str, principal: str | None,
    detached: set[asyncio.Task[Any]],
) -> AsyncIterator[ServerSentEvent]:
    """Like ``_sse``, but the run is driven by a task of its own: a client that goes away
    stops only its view (from the run's published events); the run finishes and commits."""
    events = host.subscribe(conversation_id, principal=principal)  # before it can end
    task = asyncio.ensure_future(stream.get_result())
    detached.add(task)
    task.add_done_callback(detached.discard)
    try:
        async for event in events:
            yield ServerSentEvent(event_view(event), event=type(event).__name__,
                                  id=event.sequence)
        yield ServerSentEvent(run_view(await asyncio.shield(task)), event="result")
    except Exception as exc:
        yield ServerSentEvent(describe_error(exc)[1], event="error")


async def _sse(stream: HostedRun) -> AsyncIterator[ServerSentEvent]:
    """Events as they happen (``id`` = the run's sequence); the last is ``result`` or ``error``."""
    try:
        async for event in stream:
            yield ServerSentEvent(event_view(event), event=type(event).__name__,
                                  id=event.sequence)
        yield ServerSentEvent(run_view(await stream.get_result()), event="result")
    except Exception as exc:
        yield ServerSentEvent(describe_error(exc)[1], event="error")
    finally:
        await stream.aclose()


MAX_IDEMPOTENCY_KEY = 255


def idempotency_key(request: Request) -> str | None:
    """The request's ``Idempotency-Key`` header (400 when empty or over 255 characters)."""
    key = request.headers.get("idempotency-key")
    if key is None:
        return None
    if not key.strip() or len(key) > MAX_IDEMPOTENCY_KEY:
        raise HttpError(400, "invalid_idempotency_key",
                        f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} characters, "
                        f"not {len(key)}")
    return key


def _agent_input(message: str | list[str | ChatMessageBody]) -> str | list[Any]:
    """Texts stay texts; chat message bodies become ``ChatMessage``s (422 for a bad role)."""
    if isinstance(message, str):
        return message
    try:
        return [m if isinstance(m, str) else ChatMessage(m.role, m.content)  # type: ignore[arg-type]
                for m in message]
    except ValueError as exc:
        raise HttpError(422, "invalid_message", str(exc)) from None


def _agent_routes(host: AgentHost, max_body_bytes: int) -> list[BaseRoute]:
    async def run(request: Request) -> Response:
        body = await read_json(request, AgentRunRequest, max_body_bytes=max_body_bytes)
        conversation_id = _conversation_id(request)
        principal = request_principal(request)
        message = _agent_input(body.message)
        key = idempotency_key(request)
        if request.query_params.get("stream", "").lower() in ("1", "true", "yes"):
            stream = await host.run(conversation_id, message=message, principal=principal,
                                    idempotency_key=key, stream=True)
            return sse_response(_sse(stream))
        result = await host.run(conversation_id, message=message, principal=principal,
                                idempotency_key=key)
        reply = result.outputs[0]
        return json_response({"conversation_id": conversation_id, "text": reply.text,
                              "messages": jsonable(reply.messages),
                              **({"replayed": True} if result.replayed else {})})

    async def history(request: Request) -> Response:
        conversation_id = _conversation_id(request)
        session = await host.get_session(conversation_id, principal=request_principal(request))
        return json_response({"conversation_id": conversation_id,
                              "messages": jsonable(list(session.state.get("messages", ())))})

    return [*_conversation_routes(host, run), Route(_BASE, history, methods=["GET"])]


def _openapi_route(host: Host, documented: Sequence[tuple[str, Sequence[BaseRoute]]]
                   ) -> Route:
    """``/openapi.json``: the native API, then each adapter's routes (``documented``, filled
    in once the adapters are mounted) under a tag of its name."""

    async def openapi(request: Request) -> Response:
        description = await host.describe()
        agent = isinstance(host, AgentHost)
        document = openapi_document("agent" if agent else "workflow", description.name)
        return json_response(with_adapter_routes(document, documented))

    return Route("/openapi.json", openapi, methods=["GET"])


def _health_routes(host: Host) -> list[BaseRoute]:
    async def healthz(request: Request) -> Response:
        return json_response({"status": "ok"})

    async def readyz(request: Request) -> Response:
        try:
            await host.check_ready()
        except Exception as exc:
            return json_response(
                {"error": {"code": "not_ready", "message": f"storage unreachable: {exc}"}}, 503)
        return json_response({"status": "ready"})

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]


async def _http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 answers, in the API's error shape."""
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return json_response({"error": {"code": code, "message": str(exc.detail)}},
                         exc.status_code, dict(exc.headers or {}))


async def _mapped_error(request: Request, exc: Exception) -> Response:
    return error_response(exc)


NATIVE_EXCEPTION_HANDLERS: dict[Any, Any] = {
    HTTPException: _http_exception,
    HttpError: _mapped_error,
    CheckflowError: _mapped_error,
    ValueError: _mapped_error,
    OSError: _mapped_error,  # a store's fault: a typed 503, never a traceback per request
    Exception: _mapped_error,
}
"""The native API's one error mapping, also the default of every adapter's sub-app."""


def _refusal(handlers: Mapping[Any, Any]) -> Refusal:
    """The handler ``handlers`` pick for an ``HttpError`` (looked up along its MRO)."""
    for kind in HttpError.__mro__:
        if kind in handlers:
            handler: Refusal = handlers[kind]
            return handler
    return _mapped_error


BodyRule = tuple[Sequence[str], BodyLimits, Refusal]


@dataclasses.dataclass
class _Mounted:
    """What mounting the adapters gathers for the app around them."""

    rules: list[BodyRule] = dataclasses.field(default_factory=list)
    """Each adapter's body limits and refusal shape, by its prefixes."""
    lifespans: list[AbstractAsyncContextManager[Any]] = dataclasses.field(default_factory=list)
    """What each runs beside its requests."""
    public: list[Callable[[str], bool]] = dataclasses.field(default_factory=list)
    """The paths of its own each serves without a principal (never outside its prefixes)."""
    documented: list[tuple[str, list[BaseRoute]]] = dataclasses.field(default_factory=list)
    """Each adapter's name and routes, for ``/openapi.json``."""


def _adapter_mounts(host: Host, adapters: Sequence[Adapter], limits: BodyLimits,
                    mounted: _Mounted) -> list[BaseRoute]:
    """One sub-app per adapter; ``mounted`` gathers what the app needs of each."""
    claims: list[tuple[str, Sequence[str]]] = [("the native API", NATIVE_PREFIXES)]
    mounts: list[BaseRoute] = []
    for adapter in adapters:
        name = getattr(adapter, "name", None) or type(adapter).__name__
        routes = adapter.routes(host)
        prefixes = adapter_prefixes(adapter, routes)
        check_routes_within(name, prefixes, [str(getattr(r, "path", "")) for r in routes])
        claims.append((name, prefixes))
        handlers = adapter_exception_handlers(adapter) or NATIVE_EXCEPTION_HANDLERS
        sub = Starlette(routes=routes, exception_handlers=handlers)
        own = adapter_body_limit(adapter)
        mine = limits if own is None else dataclasses.replace(limits, max_bytes=own)
        sub.state.host = host
        sub.state.max_body_bytes = mine.max_bytes
        mounted.rules.append((prefixes, mine, _refusal(handlers)))
        mounted.documented.append((str(name), routes))
        mounts.append(PrefixMount(prefixes, sub, name))
        lifespan = adapter_lifespan(adapter, host)
        if lifespan is not None:
            mounted.lifespans.append(lifespan)
        is_public = adapter_public(adapter)
        if is_public is not None:
            mounted.public.append(_within(prefixes, is_public))
    check_prefixes(claims)
    return mounts


def _within(prefixes: Sequence[str], is_public: Callable[[str], bool]
            ) -> Callable[[str], bool]:
    return lambda path: any(covers(p, path) for p in prefixes) and is_public(path)


def _lifespan(contexts: Sequence[AbstractAsyncContextManager[Any]]
              ) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The app's lifespan: every adapter's entered on start-up, left in reverse order."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for context in contexts:
                await stack.enter_async_context(context)
            yield

    return lifespan


def build_app(
    host: Host,
    *,
    adapters: Sequence[Adapter],
    authenticate: Authenticate | None,
    limits: BodyLimits,
    middleware: Sequence[Middleware] = (),
    on_disconnect: str = "cancel",
    native: bool = True,
) -> Starlette:
    """The app ``create_app`` documents (see ``checkflow.hosting._factory``)."""
    max_body_bytes = limits.max_bytes
    routes: list[BaseRoute] = [*_health_routes(host)]
    mounted = _Mounted()
    if native:
        routes.append(_openapi_route(host, mounted.documented))
    routes.extend(_adapter_mounts(host, adapters, limits, mounted))
    if native and isinstance(host, AgentHost):
        routes.extend(_agent_routes(host, max_body_bytes))
    elif native:  # without it: the adapters alone (and the health probes)
        routes.extend(_workflow_routes(host, max_body_bytes, on_disconnect))
    stack = [*middleware, Middleware(_EncodedNativePaths)]
    if authenticate is not None:
        stack.append(Middleware(_PrincipalMiddleware, authenticate=authenticate,
                                public=mounted.public))
    stack.append(Middleware(BodyGuard, limits=limits, refuse=_mapped_error,
                            make_error=HttpError, rules=mounted.rules))
    app = Starlette(routes=routes, middleware=stack,
                    exception_handlers=NATIVE_EXCEPTION_HANDLERS,
                    lifespan=_lifespan(mounted.lifespans) if mounted.lifespans else None)
    app.state.host = host
    app.state.max_body_bytes = max_body_bytes
    return app
