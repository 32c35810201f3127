"""``A2AAdapter``: the SDK's JSON-RPC, REST and agent-card routes on a checkflow ``Host``.

It composes the pieces: the task store derived from the host's turns, the gate that starts
host turns, the executor that relays them, the SDK's request handler and its route
factories. This module wires only; the rules live in ``_gate``, ``_handler`` and ``_events``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from a2a.server.agent_execution import RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.types import a2a_pb2
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from checkflow.adapters.a2a._card import base_card, load_card, with_interfaces
from checkflow.adapters.a2a._card_cache import DEFAULT_CARD_CACHE_CONTROL, CardCaching
from checkflow.adapters.a2a._deliver import PushDeliverer, PushRetry
from checkflow.adapters.a2a._errors import refusal_handler
from checkflow.adapters.a2a._executor import HostExecutor
from checkflow.adapters.a2a._gate import RunGate
from checkflow.adapters.a2a._handler import A2ARequestHandler
from checkflow.adapters.a2a._ids import PRINCIPAL_KEY
from checkflow.adapters.a2a._push import PushPolicy
from checkflow.adapters.a2a._store import A2ATaskStore
from checkflow.adapters.a2a._types import A2AMessage
from checkflow.hosting import (
    NATIVE_EXCEPTION_HANDLERS,
    Host,
    HostDescription,
    HttpError,
    request_principal,
)

__all__ = ["A2AAdapter", "default_adapter"]

_BASE_URL: contextvars.ContextVar[str] = contextvars.ContextVar("checkflow_a2a_base_url")


class _PrincipalContext(DefaultServerCallContextBuilder):
    """The SDK's call context, carrying the principal ``create_app`` authenticated."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[PRINCIPAL_KEY] = request_principal(request)
        return context


def _path(value: str, what: str) -> str:
    if not value.startswith("/") or value.endswith("/") or "//" in value:
        raise ValueError(f"{what} must start with '/' and not end with one (got {value!r})")
    return value


def _outermost(paths: Sequence[str]) -> tuple[str, ...]:
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == k or path.startswith(k + "/") for k in kept):
            kept.append(path)
    return tuple(kept)


class A2AAdapter:
    """Serve a host over A2A 1.0: JSON-RPC at ``rpc_path``, HTTP+JSON under ``rest_prefix``.

    ``agent_card`` (an ``AgentCard`` or a path to its JSON) overrides the card derived from
    the workflow; ``card_cache_control`` is the card's ``Cache-Control`` (``None``: none
    sent; it also has an ``ETag`` and a ``Last-Modified``, and answers 304s).
    ``public_url`` is the base URL the card's interfaces name; without it each card request
    derives it from the address the client used. A task is its turns in the
    host's checkpoint (no task record is kept), so any process sharing the stores serves
    every task.
    ``idle_task_timeout`` is how long a paused task's in-memory SDK state lingers before a
    follow-up rebuilds it from the store. ``shutdown_grace`` is how long a running stream is
    given on SIGTERM to end with its final status (the server stops its turns before its own
    ``--shutdown-timeout``, and each stream then ends at once with ``CANCELED``; the server's
    timeout closes whatever is left).
    ``push_notifications`` (default on; the card says so) serves a task's push configs and
    POSTs the task to each webhook on every state change, retried as ``push_retry`` says.
    Webhooks must be http(s) on public addresses; ``push_allowed_hosts`` (names and
    networks) restricts them to those (trusted even when not public), ``push_allow_local``
    also accepts loopback, link-local and private addresses (development, tests).
    """

    name = "a2a"

    def __init__(self, agent_card: a2a_pb2.AgentCard | str | Path | None = None, *,
                 card_cache_control: str | None = DEFAULT_CARD_CACHE_CONTROL,
                 rpc_path: str = "/a2a", rest_prefix: str = "/a2a/rest",
                 public_url: str | None = None, idle_task_timeout: float = 30.0,
                 shutdown_grace: float = 3600.0, push_notifications: bool = True,
                 push_allowed_hosts: Sequence[str] | None = None,
                 push_allow_local: bool = False, push_retry: PushRetry | None = None
                 ) -> None:
        self._card = load_card(agent_card) if agent_card is not None else None
        self.rpc_path = _path(rpc_path, "rpc_path")
        self.rest_prefix = _path(rest_prefix, "rest_prefix")
        self.public_url = public_url.rstrip("/") if public_url else None
        self.idle_task_timeout = idle_task_timeout
        self.shutdown_grace = shutdown_grace
        self.card_cache_control = card_cache_control
        self.push_notifications = push_notifications
        self.push_policy = PushPolicy(
            allowed_hosts=tuple(push_allowed_hosts) if push_allowed_hosts is not None
            else None, allow_local=push_allow_local)
        self.push_retry = push_retry or PushRetry()
        self._deliverers: dict[int, PushDeliverer] = {}
        self.prefixes = _outermost([self.rpc_path, self.rest_prefix,
                                    AGENT_CARD_WELL_KNOWN_PATH])
        # refused bodies (too large, slow, deep, not JSON) in A2A's own error shape
        self.exception_handlers: dict[Any, Any] = {
            **NATIVE_EXCEPTION_HANDLERS, HttpError: refusal_handler(self.rest_prefix)}

    def card_for(self, name: str, description: str, base_url: str) -> a2a_pb2.AgentCard:
        """The card served for a host of that name and description at ``base_url``."""
        card = self._card if self._card is not None else base_card(name, description)
        return with_interfaces(card, self.public_url or base_url, rpc_path=self.rpc_path,
                               rest_prefix=self.rest_prefix,
                               push_notifications=self.push_notifications)

    def try_it(self, url: str) -> list[str]:
        """A line to try this adapter with (``serve`` prints it in its banner)."""
        send = ('{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": '
                '{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "cats"}]}}}')
        return [f"curl -s -X POST {url}{self.rpc_path} -H 'content-type: application/json' "
                f"-H 'A2A-Version: 1.0' -d '{send}'"]

    def routes(self, host: Host) -> list[BaseRoute]:
        """The JSON-RPC, REST and agent-card routes serving ``host``."""
        described: list[HostDescription] = []

        async def describe() -> HostDescription:
            if not described:
                described.append(await host.describe())
            return described[0]

        async def takes_a2a_message() -> bool:
            return A2AMessage in (await describe()).input_types

        async def card_modifier(card: a2a_pb2.AgentCard) -> a2a_pb2.AgentCard:
            described = await describe()
            return self.card_for(described.name, described.description,
                                 _BASE_URL.get("http://127.0.0.1"))

        # the handler reads only the capabilities; the served card is built per request
        placeholder = self.card_for("checkflow", "", self.public_url or "http://127.0.0.1")
        push = (PushDeliverer(host, self.push_policy, self.push_retry)
                if self.push_notifications else None)
        executor = HostExecutor(host) if push is None else _PushingExecutor(host, push)
        store = A2ATaskStore(host, executor.running.__contains__)
        executor.on_end = store.forget if push is None else _both(store.forget, push.poke)
        if push is not None:
            self._deliverers[id(host)] = push
        gate = RunGate(host, store, executor, takes_a2a_message)
        handler = A2ARequestHandler(host, store, placeholder, gate=gate, executor=executor,
                                    idle_task_timeout=self.idle_task_timeout, push=push)
        context = _PrincipalContext()
        routes: list[BaseRoute] = []
        for path in (self.rpc_path, self.rpc_path + "/"):  # a trailing slash, no redirect
            routes.extend(create_jsonrpc_routes(handler, path, context_builder=context,
                                                shutdown_grace_period=self.shutdown_grace))
        routes.extend(r for r in create_rest_routes(handler, context_builder=context,
                                                    path_prefix=self.rest_prefix,
                                                    shutdown_grace_period=self.shutdown_grace)
                      if isinstance(r, Route))  # not the SDK's catch-all /{tenant} mount
        caching = CardCaching()  # the card cannot change from now on: its Last-Modified
        for route in create_agent_card_routes(placeholder, card_modifier=card_modifier,
                                              cache_control=self.card_cache_control):
            assert isinstance(route, Route)
            routes.append(Route(route.path, caching.wrap(
                _with_base_url(route.endpoint, self.public_url)), methods=["GET"]))
        return routes


    @contextlib.asynccontextmanager
    async def lifespan(self, host: Host) -> AsyncIterator[None]:
        """While the app runs: push deliveries for ``host`` (those an earlier process left
        pending first)."""
        push = self._deliverers.get(id(host))
        if push is None:
            yield
            return
        await push.start()
        try:
            yield
        finally:
            await push.stop()


class _PushingExecutor(HostExecutor):
    """The relay, telling push deliveries as a turn starts (its task is ``WORKING``)."""

    def __init__(self, host: Host, push: PushDeliverer) -> None:
        super().__init__(host)
        self._push = push

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        self._push.poke(context.task_id or "")
        await super().execute(context, event_queue)


def _both(first: Callable[[str], None], second: Callable[[str], None]
          ) -> Callable[[str], None]:
    def both(task_id: str) -> None:
        first(task_id)
        second(task_id)

    return both


def _with_base_url(endpoint: Any, public_url: str | None) -> Any:
    async def card(request: Request) -> Response:
        token = _BASE_URL.set(public_url or f"{request.url.scheme}://{request.url.netloc}")
        try:
            response: Response = await endpoint(request)
            return response
        finally:
            _BASE_URL.reset(token)

    return card


def default_adapter(*, public_url: str | None = None) -> A2AAdapter:
    """The adapter ``serve --adapters a2a`` mounts: the card derived from the workflow, its
    interface URLs from ``public_url`` (``serve --public-url``) or else from each request."""
    return A2AAdapter(public_url=public_url)
