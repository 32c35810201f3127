"""The app seam: ``create_app`` and the request principal (``Adapter`` is in ``_adapter``).

Importable without the ``hosting`` extra (so ``import checkflow`` needs only msgspec):
starlette is imported when ``create_app`` is called, with an error naming the extra if it
is missing. This module must never build routes itself; ``_app`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from checkflow._extras import requires_extra
from checkflow.hosting._adapter import Adapter

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request

    from checkflow.hosting._bounds import BodyLimits
    from checkflow.hosting._protocol import Host

__all__ = ["Adapter", "Authenticate", "create_app", "request_principal"]

Authenticate = Callable[["Request"], "str | Awaitable[str | None] | None"]
"""``authenticate(request) -> principal | None``, sync or async; ``None`` means 401."""


def request_principal(request: Request) -> str | None:
    """The principal ``authenticate`` resolved for this request (``None`` without auth)."""
    state = request.scope.get("state")  # where ``request.state`` keeps it
    return state.get("principal") if state is not None else None


def create_app(
    host: Host,
    *,
    adapters: Sequence[Adapter] = (),
    authenticate: Authenticate | None = None,
    max_body_bytes: int | None = None,
    middleware: Sequence[Middleware] = (),
    on_disconnect: str = "cancel",
    limits: BodyLimits | None = None,
    native: bool = True,
) -> Starlette:
    """A Starlette app serving ``host``: ``/healthz``, ``/readyz``, adapters, the native API
    (``/v1/...`` and ``/openapi.json``; ``native=False`` leaves it out, the probes stay).

    ``authenticate(request) -> principal | None`` (sync or async), when given, runs for every
    request but the health probes; ``None`` answers 401, and each principal sees only its
    own conversations. Every request body, adapters' and SDK routes' included, is held to
    ``limits`` (``BodyLimits``: size, JSON nesting, the time it may take to arrive) before
    any route parses it; ``max_body_bytes``, when given, replaces ``limits.max_bytes``
    (default 1 MiB). A body over it is refused with 413 while streaming.
    Each adapter is mounted as a sub-app under its prefixes; overlapping prefixes raise
    ``AdapterConflictError`` naming both. ``middleware`` (Starlette ``Middleware`` entries,
    first outermost) wraps every request, health probes and adapters included, outside the
    principal check: e.g. ``Middleware(checkflow.telemetry.TracingMiddleware)``. A streamed
    native run whose client disconnects is cancelled at its next safe point
    (``on_disconnect="cancel"``), or runs on and commits (``"continue"``; the client
    re-attaches with ``GET /v1/conversations/{id}/events``).
    """
    if on_disconnect not in ("cancel", "continue"):
        raise ValueError(f"on_disconnect must be 'cancel' or 'continue', not {on_disconnect!r}")
    with requires_extra("hosting", "create_app"):
        from checkflow.hosting._app import build_app
        from checkflow.hosting._bounds import BodyLimits
    bounds = limits if limits is not None else BodyLimits()
    if max_body_bytes is not None:
        bounds = dataclasses.replace(bounds, max_bytes=max_body_bytes)
    return build_app(host, adapters=adapters, authenticate=authenticate, limits=bounds,
                     middleware=middleware, on_disconnect=on_disconnect, native=native)
