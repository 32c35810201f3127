"""Connection bounds uvicorn lacks: a deadline for the request head.

uvicorn closes idle keep-alive connections and answers 503 beyond ``limit_concurrency``, but a
client that connects and then sends its request head slowly (or never) holds a connection,
and its file descriptor, for as long as it likes. The protocol made here closes a connection
whose head is not complete ``header_timeout`` seconds after the connection opened (or after
the previous response). This module must never touch requests once their head has arrived.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["bounded_protocol"]


def bounded_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """An h11 protocol class that closes connections slower than ``header_timeout``."""

    class HeaderDeadlineProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(header_timeout, self._expire)

        def _expire(self) -> None:
            self._deadline = None
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
