"""``TracingMiddleware``: one SERVER span per hosted request, parented by the client's trace.

An ASGI middleware, so it covers the native API and every adapter alike. The incoming W3C
``traceparent``/``tracestate`` headers parent the span; the run a request starts executes in
its context, so the run's spans are the request's children. Attributes: the adapter (from
the path prefix), the conversation (from a native path, or set by the run when the host
starts one), whether a principal was resolved, the HTTP method, route and status. Never a
header value, a body or a secret. This module must never read a request body.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from checkflow.telemetry import _names as n

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["TracingMiddleware", "annotate_request", "instrument_app"]

_REQUEST: ContextVar[Span | None] = ContextVar("checkflow_telemetry_request", default=None)
_W3C = TraceContextTextMapPropagator()
_NATIVE = "native"
_NATIVE_PREFIXES = ("/v1", "/healthz", "/readyz")
_CONVERSATIONS = "/v1/conversations/"
_NATIVE_ACTIONS = ("runs", "cancel", "snapshots")
_PROBES = ("/healthz", "/readyz")


def annotate_request(key: str, value: str | bool | int) -> None:
    """Set an attribute on the current request's span (a no-op outside a traced request)."""
    span = _REQUEST.get()
    if span is not None:
        span.set_attribute(key, value)


def _covers(prefix: str, path: str) -> bool:
    stem = prefix.rstrip("/")
    return path in (prefix, stem) or path.startswith(stem + "/")


def _native_route(raw_path: str) -> tuple[str, str | None]:
    """The route template of a native path and the conversation id in it, if any."""
    if not raw_path.startswith(_CONVERSATIONS):
        return raw_path, None
    rest = raw_path[len(_CONVERSATIONS):].split("/")
    conversation, tail = rest[0], rest[1:]
    route = _CONVERSATIONS + "{conversation_id}"
    if tail and tail[0] in _NATIVE_ACTIONS:
        route += "/" + tail[0] + ("/{snapshot_id}" if len(tail) > 1 else "")
    try:
        decoded = urllib.parse.unquote_to_bytes(conversation).decode("utf-8")
    except UnicodeDecodeError:
        decoded = None
    return route, decoded or None


class TracingMiddleware:
    """ASGI middleware: a span per request (health probes excluded unless ``probes=True``).

    ``create_app(host, middleware=[Middleware(TracingMiddleware)])`` or
    ``instrument_app(app)``; the global tracer provider when ``tracer_provider`` is None.
    The span follows the HTTP server conventions (``http.request.method``, ``http.route``,
    ``http.response.status_code``, ``url.path``; status ERROR for 5xx) and adds
    ``checkflow.adapter``, ``gen_ai.conversation.id`` and ``checkflow.principal.present``.
    """

    def __init__(self, app: ASGIApp, *, tracer_provider: TracerProvider | None = None,
                 probes: bool = False) -> None:
        self.app = app
        self._tracer = trace.get_tracer(n.INSTRUMENTATION, tracer_provider=tracer_provider)
        self._probes = probes
        self._adapters: list[tuple[str, str]] | None = None

    def _adapter_prefixes(self, scope: Scope) -> list[tuple[str, str]]:
        """(prefix, adapter name) of the app's adapter mounts, read once from its routes."""
        if self._adapters is None:
            found: list[tuple[str, str]] = []
            for route in getattr(scope.get("app"), "routes", ()):
                prefixes: Sequence[str] = getattr(route, "prefixes", ())
                name = getattr(route, "name", None)
                found.extend((p, str(name)) for p in prefixes if name)
            self._adapters = found
        return self._adapters

    def _classify(self, scope: Scope) -> tuple[str, str, str | None]:
        """(adapter name, route, conversation id) of a request, from its path alone."""
        path: str = scope["path"]
        for prefix, name in self._adapter_prefixes(scope):
            if _covers(prefix, path):
                return name, prefix, None
        if any(_covers(p, path) for p in _NATIVE_PREFIXES):
            raw = scope.get("raw_path") or path.encode()
            route, conversation = _native_route(raw.split(b"?", 1)[0].decode("ascii", "replace"))
            return _NATIVE, route, conversation
        return "", "", None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (not self._probes and scope["path"] in _PROBES):
            await self.app(scope, receive, send)
            return
        carrier: dict[str, str] = {}
        for key, value in scope.get("headers", ()):
            name = key.decode("latin-1").lower()
            if name in ("traceparent", "tracestate"):
                carrier[name] = value.decode("latin-1")
        parent = _W3C.extract(carrier)
        adapter, route, conversation = self._classify(scope)
        method = scope.get("method", "GET")
        attributes: dict[str, Any] = {n.HTTP_METHOD: method, n.URL_PATH: scope["path"],
                                      n.ADAPTER: adapter}
        if route:
            attributes[n.HTTP_ROUTE] = route
        if conversation is not None:
            attributes[n.CONVERSATION_ID] = conversation
        state = scope.setdefault("state", {})  # shared with the app: the principal lands here
        status: list[int] = []

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        with self._tracer.start_as_current_span(
                f"{method} {route}".strip(), context=parent, kind=SpanKind.SERVER,
                attributes=attributes, record_exception=False,
                set_status_on_exception=False) as span:
            token = _REQUEST.set(span)
            try:
                await self.app(scope, receive, send_status)
            except Exception as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                span.set_attribute(n.ERROR_TYPE, type(exc).__qualname__)
                raise
            finally:
                _REQUEST.reset(token)
                span.set_attribute(n.PRINCIPAL_PRESENT, state.get("principal") is not None)
                if status:
                    span.set_attribute(n.HTTP_STATUS, status[0])
                    if status[0] >= 500:
                        span.set_status(Status(StatusCode.ERROR))
                        span.set_attribute(n.ERROR_TYPE, str(status[0]))


def instrument_app(app: Starlette, *, tracer_provider: TracerProvider | None = None,
                   probes: bool = False) -> Starlette:
    """Add ``TracingMiddleware`` as the outermost middleware of ``app`` (before it starts)."""
    app.add_middleware(TracingMiddleware, tracer_provider=tracer_provider, probes=probes)
    return app
