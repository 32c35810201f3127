"""``python -m checkflow serve``: load a target by ``MODULE:ATTR`` and serve it with uvicorn.

The socket is bound before the banner is printed, so the printed URL (also with ``--port 0``)
is the one that answers. This module must never be imported by library code: it is the
command's implementation only.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import uvicorn

from checkflow.agents import Agent
from checkflow.cli._logging import LogSettings, configure_logging
from checkflow.cli._storage_url import open_storage
from checkflow.hosting import Adapter, AgentHost, Host, WorkflowHost, create_app
from checkflow.workflows import Interceptor

__all__ = ["load_object", "serve"]


def load_object(spec: str) -> Any:
    """The object ``MODULE:ATTR`` names (the current directory is importable)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected MODULE:ATTR, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{spec!r}: {module_name} has no attribute {attr!r}") from None
    return obj


def _adapters(names: Sequence[str], *, public_url: str | None = None) -> list[Adapter]:
    """Adapters by name: ``native`` (always mounted), ``checkflow.adapters.<name>``'s
    ``default_adapter()``, or a ``MODULE:ATTR`` naming an adapter or a factory of one.

    A factory that takes ``public_url`` (the A2A card's interface URLs) is given it."""
    found: list[Adapter] = []
    for name in names:
        if name == "native":
            continue
        if ":" in name:
            obj = load_object(name)
        else:
            module_name = f"checkflow.adapters.{name}"
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name not in (module_name, "checkflow.adapters"):
                    raise  # the adapter exists but its extra is missing: say which module
                raise ValueError(f"--adapters: no adapter named {name!r}") from exc
            obj = module.default_adapter
        # a class has a ``routes`` attribute too: only an instance is an adapter as it is
        is_adapter = isinstance(obj, Adapter) and not isinstance(obj, type)
        if is_adapter:
            found.append(obj)
        elif public_url is not None and "public_url" in inspect.signature(obj).parameters:
            found.append(obj(public_url=public_url))
        else:
            found.append(obj())
    return found


def _banner(target: str, url: str, storage: str) -> str:
    runs = f"{url}/v1/conversations/demo/runs"
    return "\n".join([
        f"checkflow: serving {target} on {url} (storage {storage})",
        "try it:",
        f"  curl -s -X POST {runs} -H 'content-type: application/json' "
        "-d '{\"message\": \"cats\"}'",
        "then answer the pending request it returns:",
        f"  curl -s -X POST {runs} -H 'content-type: application/json' "
        "-d '{\"responses\": {\"<request_id>\": true}}'",
    ])


async def serve(
    target: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    storage: str,
    adapters: Sequence[str] = ("native",),
    authenticate: str | None = None,
    foundry: bool = False,
    public_url: str | None = None,
    logs: LogSettings | None = None,
    otel: bool = False,
) -> None:
    """Serve ``target`` until interrupted; prints the URL and a curl line to try first."""
    logs = logs or LogSettings()
    with _telemetry(otel, logs) as (interceptors, middleware):
        await _serve(target, host=host, port=port, storage=storage, adapters=adapters,
                     authenticate=authenticate, foundry=foundry, public_url=public_url,
                     logs=logs, interceptors=interceptors, middleware=middleware)


@contextlib.contextmanager
def _telemetry(otel: bool, logs: LogSettings) -> Iterator[tuple[list[Interceptor], list[Any]]]:
    """Logging as ``logs`` says and, with ``otel``, the SDK (flushed when serving ends)."""
    if not otel:
        configure_logging(logs)
        yield [], []
        return
    from starlette.middleware import Middleware

    from checkflow.telemetry import (
        OpenTelemetryInterceptor,
        TraceContextFilter,
        TracingMiddleware,
        configure_from_environment,
    )

    configure_logging(logs, filters=(TraceContextFilter(),))
    shutdown = configure_from_environment()
    try:
        yield [OpenTelemetryInterceptor()], [Middleware(TracingMiddleware)]
    finally:
        shutdown()


async def _serve(
    target: str,
    *,
    host: str,
    port: int,
    storage: str,
    adapters: Sequence[str],
    authenticate: str | None,
    foundry: bool,
    public_url: str | None,
    logs: LogSettings,
    interceptors: list[Interceptor],
    middleware: list[Any],
) -> None:
    obj = load_object(target)
    auth = load_object(authenticate) if authenticate else None
    adapter_objects = _adapters(adapters, public_url=public_url)
    if foundry:  # the container contract: the Foundry adapter in container mode, once
        from checkflow.adapters.foundry import FoundryAdapter

        adapter_objects = [a for a in adapter_objects if not isinstance(a, FoundryAdapter)]
        adapter_objects.append(FoundryAdapter(container=True))
    async with open_storage(storage) as stores:
        hosted: Host
        if isinstance(obj, Agent):
            hosted = AgentHost(obj, session_store=stores.session_store)
        else:
            hosted = WorkflowHost(obj, session_store=stores.session_store,
                                  checkpoint_storage=stores.checkpoint_storage,
                                  interceptors=interceptors)
        try:
            await hosted.describe()  # resolve the target now, not on the first request
        except TypeError as exc:
            raise ValueError(f"{target}: {exc}") from exc
        app = create_app(hosted, adapters=adapter_objects, authenticate=auth,
                         middleware=middleware)
        server = uvicorn.Server(uvicorn.Config(app, log_config=None, log_level=logs.level,
                                               access_log=logs.access_log))
        with _listening(host, port) as sock:
            shown = f"[{host}]" if ":" in host else host
            url = f"http://{shown}:{sock.getsockname()[1]}"
            print(_banner(target, url, storage), flush=True)
            await server.serve(sockets=[sock])


@contextlib.contextmanager
def _listening(host: str, port: int) -> Iterator[socket.socket]:
    """A bound, listening socket: connections queue from here on, so a printed URL answers.

    Made with ``IPPROTO_TCP`` explicitly: asyncio turns ``TCP_NODELAY`` on for accepted
    connections only when the listening socket's ``proto`` says TCP, and without it every
    response waits for the client's delayed ACK (40 ms and more per request).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
        yield sock
    finally:
        sock.close()
