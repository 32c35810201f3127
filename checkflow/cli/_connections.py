"""Connection bounds uvicorn lacks: a deadline for the request head, and room for files.

uvicorn closes idle keep-alive connections and answers 503 beyond ``limit_concurrency`` (here
in the API's JSON error shape, not uvicorn's plain text), but a
client that connects and then sends its request head slowly (or never) holds a connection,
and its file descriptor, for as long as it likes. The protocol made here closes a connection
whose head is not complete ``header_timeout`` seconds after the connection opened (or after
the previous response). The concurrency limit is kept below the process's file-descriptor
limit, so the 503 comes before the storage runs out of descriptors, and an ``accept`` that
fails for want of descriptors logs one line a second at most, not a traceback per attempt.
This module must never touch requests once their head has arrived.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sys
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from checkflow.cli._serve_options import DEFAULT_CONCURRENCY, ServeOptions

__all__ = ["bounded_protocol", "quiet_accept_errors", "within_descriptor_limit"]

_log = logging.getLogger("checkflow.serve")
DESCRIPTORS_PER_REQUEST = 4
"""A connection and the files one request may hold open (session, lock, log)."""
DESCRIPTORS_RESERVED = 32
"""For the interpreter, the listening socket, the event loop and the stores."""


_BUSY = json.dumps({"error": {
    "code": "server_busy",
    "message": "the server is at its concurrency limit (--limit-concurrency); retry shortly",
}}).encode()


async def _busy(scope: Any, receive: Any, send: Any) -> None:
    """uvicorn's answer past the concurrency limit, as JSON like every other error."""
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(_BUSY)).encode()),
        (b"retry-after", b"1"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": _BUSY, "more_body": False})


def bounded_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """An h11 protocol class that closes connections slower than ``header_timeout``."""

    class HeaderDeadlineProtocol(H11Protocol):
        # One timer per connection, moved on lazily: a response only sets ``_due``, and the
        # timer, when it fires early, waits for the later deadline (no timer per request).
        _deadline: asyncio.TimerHandle | None = None
        _due = 0.0

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # The concurrency check uvicorn makes, made here so that the 503 is JSON: the
            # same counts (this request's task is among ``tasks`` by the time it runs).
            self._limit = self.limit_concurrency
            self.limit_concurrency = None
            if self._limit is not None:
                self._inner_app, self.app = self.app, self._app_or_busy

        async def _app_or_busy(self, scope: Any, receive: Any, send: Any) -> None:
            limit = self._limit
            assert limit is not None
            if len(self.connections) >= limit or len(self.tasks) > limit:
                self.logger.warning("Exceeded concurrency limit.")
                await _busy(scope, receive, send)
                return
            await self._inner_app(scope, receive, send)

        def _arm(self) -> None:
            self._due = self.loop.time() + header_timeout
            if self._deadline is None:
                self._deadline = self.loop.call_at(self._due, self._expire)

        def _expire(self) -> None:
            self._deadline = None
            if self.loop.time() < self._due:  # a response since: the head has until then
                self._deadline = self.loop.call_at(self._due, self._expire)
                return
            waiting = self.conn.their_state is h11.IDLE  # no whole request head yet
            if waiting and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            super().connection_lost(exc)

    return HeaderDeadlineProtocol


def within_descriptor_limit(options: ServeOptions) -> ServeOptions:
    """``options`` with ``limit_concurrency`` set: the default, or what the descriptor limit
    allows if that is less; a limit given that does not fit is lowered with a warning."""
    room: int | None = None
    try:
        import resource
    except ImportError:  # no such limit to respect here (Windows)
        soft = None
    else:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY:
            room = max(1, (soft - DESCRIPTORS_RESERVED) // DESCRIPTORS_PER_REQUEST)
    given = options.limit_concurrency
    if given is None:
        limit = DEFAULT_CONCURRENCY if room is None else min(DEFAULT_CONCURRENCY, room)
    elif room is not None and given > room:
        print(f"checkflow: --limit-concurrency lowered from {given} to {room}: the "
              f"file-descriptor limit is {soft} (raise it with ulimit -n)",
              file=sys.stderr, flush=True)
        limit = room
    else:
        limit = given
    return dataclasses.replace(options, limit_concurrency=limit)


def quiet_accept_errors(loop: asyncio.AbstractEventLoop, *, every: float = 1.0) -> None:
    """Log a failing ``accept`` (no descriptors left) as one line per ``every`` seconds.

    asyncio already stops accepting for a second after such a failure; its default handler
    writes a whole traceback each time. Every other loop error goes to the default handler.
    """
    last = [-every]

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if not str(context.get("message", "")).startswith("socket.accept() out of system"):
            loop.default_exception_handler(context)
            return
        now = time.monotonic()
        if now - last[0] >= every:
            last[0] = now
            _log.warning("cannot accept connections: %s", context.get("exception"))

    loop.set_exception_handler(handle)
