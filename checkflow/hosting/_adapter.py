"""The ``Adapter`` protocol: how a protocol adapter plugs into ``create_app``.

An adapter hands the app the routes that translate its protocol onto a ``Host``; the app
mounts them as a sub-app of their own under the path prefixes the adapter declares, with the
adapter's own error mapping. Only the protocol lives here; this module must never build an app.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from checkflow.hosting._protocol import Host

__all__ = ["Adapter", "adapter_body_limit", "adapter_exception_handlers", "adapter_lifespan",
           "adapter_prefixes", "adapter_public"]


@runtime_checkable
class Adapter(Protocol):
    """A protocol adapter: ``routes(host)`` returns the routes serving its protocol.

    Routes call the host with ``principal=request_principal(request)``. Two optional
    attributes refine how ``create_app`` mounts them:

    - ``prefixes``: the path prefixes the routes live under (e.g. ``("/agui",)``); without it
      each route's first path segment is taken. Overlapping another adapter's prefixes or the
      native API's (``/v1``, ``/healthz``, ``/readyz``) refuses to start, naming both.
    - ``exception_handlers``: the adapter's own Starlette exception-handler mapping (its
      protocol's error shape); without it errors get the native API's JSON mapping. Its
      handler for ``HttpError`` also answers the bodies the app refuses before any route
      runs (too large, too slow, too deeply nested, not JSON).
    - ``max_body_bytes``: the largest request body its routes take (``None``: the app's).
    - ``lifespan(host)``: an async context manager the app enters on start-up and leaves on
      shutdown (work of its own beside requests, e.g. A2A push deliveries); called after
      ``routes(host)``.
    - ``is_public(path)``: whether a path of its own is served without ``authenticate``
      (files a browser loads before it can send credentials, e.g. the inspector's pages);
      without it every path needs a principal.
    """

    def routes(self, host: Host) -> list[BaseRoute]:
        """The routes serving this protocol for ``host`` (any ``Host``)."""
        ...


def adapter_prefixes(adapter: Adapter, routes: Sequence[BaseRoute]) -> tuple[str, ...]:
    """The prefixes ``adapter`` declares, or those its routes' first path segments imply."""
    declared = getattr(adapter, "prefixes", None)
    if declared is not None:
        return tuple(str(p) for p in declared)
    found: list[str] = []
    for route in routes:
        path = str(getattr(route, "path", "/"))
        first = "/" + path.lstrip("/").split("/", 1)[0]
        if first not in found:
            found.append(first)
    return tuple(found)


def adapter_exception_handlers(adapter: Adapter) -> Mapping[Any, Any] | None:
    """The adapter's own exception handlers, or ``None`` for the native mapping."""
    handlers = getattr(adapter, "exception_handlers", None)
    return dict(handlers) if handlers is not None else None


def adapter_body_limit(adapter: Adapter) -> int | None:
    """The adapter's own body size limit, or ``None`` for the app's."""
    limit = getattr(adapter, "max_body_bytes", None)
    return int(limit) if limit is not None else None


def adapter_lifespan(adapter: Adapter, host: Host) -> AbstractAsyncContextManager[Any] | None:
    """What the adapter runs beside its requests for ``host``, or ``None``."""
    lifespan = getattr(adapter, "lifespan", None)
    if lifespan is None:
        return None
    context: AbstractAsyncContextManager[Any] = lifespan(host)
    return context


def adapter_public(adapter: Adapter) -> Callable[[str], bool] | None:
    """The adapter's ``is_public(path)``, or ``None`` when all its paths need a principal."""
    check = getattr(adapter, "is_public", None)
    return check if callable(check) else None
