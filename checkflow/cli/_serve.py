"""``python -m checkflow serve``: load a target by ``MODULE:ATTR`` and serve it with uvicorn.

The socket is bound before the banner is printed, so the printed URL (also with ``--port 0``)
is the one that answers. This module must never be imported by library code: it is the
command's implementation only.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import inspect
import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import uvicorn

from checkflow.agents import Agent
from checkflow.cli._connections import (
    bounded_protocol,
    quiet_accept_errors,
    within_descriptor_limit,
)
from checkflow.cli._logging import LogSettings, configure_logging
from checkflow.cli._serve_options import ServeOptions
from checkflow.cli._storage_url import open_storage
from checkflow.hosting import Adapter, AgentHost, BodyLimits, Host, WorkflowHost, create_app
from checkflow.workflows import Interceptor

__all__ = ["event_loop", "load_object", "run_serve", "serve", "server_config"]


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
    """Adapters by name: ``native`` (the native API, mounted only when named: see
    ``_serve``), ``checkflow.adapters.<name>``'s
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


def event_loop(choice: str) -> tuple[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The loop ``--loop choice`` names: its name and a factory for it.

    ``auto`` is uvloop when it imports (the ``hosting`` extra has it), else asyncio's own;
    ``uvloop`` without uvloop installed is an ``ImportError`` naming the extra.
    """
    if choice == "asyncio":
        return "asyncio", asyncio.new_event_loop
    try:
        import uvloop
    except ImportError as exc:
        if choice == "auto":
            return "asyncio", asyncio.new_event_loop
        raise ImportError("--loop uvloop needs uvloop: pip install 'checkflow[hosting]'"
                          ) from exc
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return "uvloop", factory


def run_serve(target: str, options: ServeOptions) -> None:
    """Run ``serve`` to its end on the event loop ``options.loop`` names."""
    name, factory = event_loop(options.loop)
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(serve(target, options, loop_name=name))


def _banner(target: str, url: str, storage: str, loop_name: str, *, native: bool,
            adapters: Sequence[Any]) -> str:
    """What is served and one line to try per protocol: the native API's when mounted, and
    each adapter's ``try_it(url)`` lines (an optional attribute of an adapter)."""
    lines = [f"checkflow: serving {target} on {url} (storage {storage}, loop {loop_name})",
             "try it:"]
    if native:
        runs = f"{url}/v1/conversations/demo/runs"
        lines += [
            f"  curl -s -X POST {runs} -H 'content-type: application/json' "
            "-d '{\"message\": \"cats\"}'",
            "then answer the pending request it returns:",
            f"  curl -s -X POST {runs} -H 'content-type: application/json' "
            "-d '{\"responses\": {\"<request_id>\": true}}'",
        ]
    for adapter in adapters:
        try_it = getattr(adapter, "try_it", None)
        if callable(try_it):
            lines += [f"  {line}" for line in try_it(url)]
    if len(lines) == 2:  # nothing to suggest: only the probes (and adapters of no example)
        lines.append(f"  curl -s {url}/healthz")
    return "\n".join(lines)


async def serve(target: str, options: ServeOptions, *, loop_name: str = "asyncio") -> None:
    """Serve ``target`` until interrupted; prints the URL and a curl line to try first.

    It runs on the caller's loop (``run_serve`` picks it); ``loop_name`` is for the banner.
    """
    with _telemetry(options.otel, options.logs) as (interceptors, middleware):
        await _serve(target, options, interceptors, middleware, loop_name)


@contextlib.contextmanager
def _telemetry(otel: bool, logs: LogSettings) -> Iterator[tuple[list[Interceptor], list[Any]]]:
    """Logging as ``logs`` says and, with ``otel``, the SDK (flushed when serving ends)."""
    if not otel:
        configure_logging(logs)
        yield [], []
        return
    from starlette.middleware import Middleware  # only with --otel: the otel extra's imports

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


async def _serve(target: str, options: ServeOptions, interceptors: list[Interceptor],
                 middleware: list[Any], loop_name: str) -> None:
    obj = load_object(target)
    auth = load_object(options.authenticate) if options.authenticate else None
    adapter_objects = _adapters(options.adapters, public_url=options.public_url)
    if options.foundry:  # the container contract: the Foundry adapter in container mode, once
        from checkflow.adapters.foundry import FoundryAdapter

        adapter_objects = [a for a in adapter_objects if not isinstance(a, FoundryAdapter)]
        adapter_objects.append(FoundryAdapter(container=True))
    if options.inspector and isinstance(obj, Agent):
        raise ValueError("--inspector shows workflow checkpoints, and an agent host keeps "
                         "none: serve a workflow that runs the agent instead")
    if options.inspector:  # its pages write through the native API: without it, read-only
        from checkflow.inspector import InspectorAdapter

        adapter_objects.append(InspectorAdapter(writable="native" in options.adapters))
    async with open_storage(options.storage) as stores:
        hosted: Host
        if isinstance(obj, Agent):
            hosted = AgentHost(obj, session_store=stores.session_store,
                               lease_seconds=options.lease_seconds,
                               max_record_bytes=options.max_record_bytes)
        else:
            hosted = WorkflowHost(obj, session_store=stores.session_store,
                                  checkpoint_storage=stores.checkpoint_storage,
                                  lease_seconds=options.lease_seconds,
                                  interceptors=interceptors,
                                  max_record_bytes=options.max_record_bytes)
        try:
            await hosted.describe()  # resolve the target now, not on the first request
        except TypeError as exc:
            raise ValueError(f"{target}: {exc}") from exc
        limits = BodyLimits(max_bytes=options.max_body_bytes, max_depth=options.max_json_depth,
                            timeout=options.body_timeout, min_rate=options.min_body_rate)
        app = create_app(hosted, adapters=adapter_objects, authenticate=auth,
                         on_disconnect=options.on_disconnect, middleware=middleware,
                         limits=limits, native="native" in options.adapters)
        options = within_descriptor_limit(options)
        quiet_accept_errors(asyncio.get_running_loop())
        server = GracefulServer(server_config(app, options), hosted, options.shutdown_timeout)
        tune_collector()
        with _listening(options.host, options.port) as sock:
            shown = f"[{options.host}]" if ":" in options.host else options.host
            url = f"http://{shown}:{sock.getsockname()[1]}"
            print(_banner(target, url, options.storage, loop_name,
                          native="native" in options.adapters,
                          adapters=adapter_objects), flush=True)
            if auth is None and not _loopback(options.host):
                print(f"checkflow: warning: {shown} is reachable beyond this machine and "
                      "there is no --authenticate: every client is the same tenant and can "
                      "list, read, answer and delete every conversation and task",
                      file=sys.stderr, flush=True)
            await server.serve(sockets=[sock])


GRACE = 0.8
"""Of ``--shutdown-timeout``, the part running turns get to finish before they are stopped."""


class GracefulServer(uvicorn.Server):
    """uvicorn's server, whose graceful shutdown also stops the running turns in time.

    On SIGTERM it stops accepting connections (uvicorn) and lets running turns go on for
    ``GRACE`` of ``--shutdown-timeout``; then it stops every turn still running, each at its
    next safe point with its cancelled outcome, which every protocol's stream renders as its
    terminal event (AG-UI ``RUN_FINISHED``/``RUN_ERROR``, an A2A status update, a Responses
    terminal event). So the streams end properly within the timeout and every conversation
    keeps its last good head; turns no client waits for (background ones) are stopped last.
    """

    def __init__(self, config: uvicorn.Config, host: Host, timeout: float) -> None:
        super().__init__(config)
        self._host = host
        self._timeout = timeout

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        loop = asyncio.get_running_loop()
        stopping: list[asyncio.Future[None]] = []
        timer = loop.call_later(self._timeout * GRACE,
                                lambda: stopping.append(asyncio.ensure_future(self._stop())))
        try:
            await super().shutdown(sockets)
        finally:
            timer.cancel()
            await self._stop()
            await asyncio.gather(*stopping, return_exceptions=True)

    async def _stop(self) -> None:
        try:
            await asyncio.wait_for(self._host.stop_turns(), max(1.0, self._timeout))
        except Exception:  # a turn that will not stop: the process ends anyway
            logging.getLogger("checkflow.serve").warning(
                "not every running turn stopped within %ss", self._timeout, exc_info=True)


def _loopback(host: str) -> bool:
    """Whether ``host`` (as given to ``--host``) is reachable only from this machine."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


GC_YOUNG_THRESHOLD = 10_000


def tune_collector() -> None:
    """Set the cyclic garbage collector for a server, once everything it serves is loaded.

    What is alive now (modules, the workflow, the app) lives as long as the server, so it is
    frozen out of every later collection; and the youngest generation is collected after
    10,000 allocations instead of 700: a request allocates a few thousand short-lived objects
    that reference counting frees anyway (measured with ``bench/hosting.py``: about 6% less
    CPU per conversation on ``memory:``).
    """
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def server_config(app: Any, options: ServeOptions) -> uvicorn.Config:
    """uvicorn's configuration for ``options``: bounded connections, a graceful shutdown."""
    return uvicorn.Config(
        app, log_config=None, log_level=options.logs.level, access_log=options.logs.access_log,
        http=bounded_protocol(options.header_timeout),
        timeout_keep_alive=max(1, round(options.keep_alive_timeout)),
        limit_concurrency=options.limit_concurrency,
        h11_max_incomplete_event_size=options.max_header_bytes,
        timeout_graceful_shutdown=max(1, round(options.shutdown_timeout)),
    )


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
        try:
            sock.bind((host, port))
        except OSError as exc:
            shown = f"[{host}]" if ":" in host else host
            raise ValueError(f"cannot listen on {shown}:{port}: {exc.strerror or exc}") from None
        sock.listen(2048)
        yield sock
    finally:
        sock.close()
