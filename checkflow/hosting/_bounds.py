"""Bounds on every request body, checked in one place before any route or SDK parses it.

``BodyGuard`` sits in front of the whole app (native API and every mounted adapter, SDK routes
included) and reads each request body itself, as it streams in: a declared or streamed size
past the limit is refused at once (413) without buffering more than the limit; a body that
has not arrived within its deadline is refused (408); a non-JSON media type is refused (415);
a JSON body nesting deeper than the limit is refused (the native API's 422, each protocol's own
error elsewhere) before any parser can recurse into it. Every refusal closes the connection,
so the rest of an oversized or slow body is never read (past a bounded linger, read and
dropped, that lets a client sending too much read its 413 instead of a reset). A
body that passes is handed on as it was, byte for byte. This module must never parse a body
into objects, and never run anything.
"""

from __future__ import annotations

import asyncio
import operator
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from checkflow.hosting._mounts import covers

__all__ = ["BODY_KEY", "BodyGuard", "BodyLimits", "Refusal", "is_json_media", "nests_deeper"]

BODY_KEY = "checkflow.body"
"""Where the guard leaves a body it read in the ASGI scope (so ``read_json`` reads no more)."""

Refusal = Callable[[Request, Exception], Awaitable[Response]]
"""How one part of the app answers a refused body: an exception handler for ``HttpError``."""


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """The bounds every request body is held to (defaults safe on an open port).

    ``max_bytes``: the largest body (413 past it). ``max_depth``: how deeply JSON may nest
    objects and arrays. ``timeout``: seconds a body has to arrive in full, plus one second
    for every ``min_rate`` bytes received, so a large upload at a fair rate always finishes
    while a trickle of one byte a second is cut off after about ``timeout`` seconds (408).
    """

    max_bytes: int = 1_048_576
    max_depth: int = 64
    timeout: float = 30.0
    min_rate: int = 65_536

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_depth", "min_rate"):
            if getattr(self, name) <= 0:
                raise ValueError(f"BodyLimits.{name} must be positive, not {getattr(self, name)}")
        if not self.timeout > 0:
            raise ValueError(f"BodyLimits.timeout must be positive, not {self.timeout}")


def is_json_media(content_type: str) -> bool:
    """Whether a ``content-type`` header names JSON (``application/json`` or ``*+json``)."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and
                                            media.endswith("+json"))


_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # open = +1, close = -1 (after -1)
_INNERMOST = re.compile(rb"\x02\x00")
_PEEL = 8


def nests_deeper(body: bytes, limit: int) -> bool:
    """Whether JSON ``body`` nests objects and arrays more than ``limit`` levels deep.

    Measured on the bytes, never by parsing (a parser is what deep nesting attacks): strings
    are cut out (brackets inside them do not count), then only brackets are kept. Shallow
    bodies are settled by peeling innermost pairs a few times; deeper ones by the running
    depth's maximum. Malformed JSON is left for the parser to name.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    shape = _STRINGS.sub(b"", body) if b'"' in body else body
    shape = shape.translate(None, _NOT_BRACKETS).translate(_STEPS)
    peeled = 0
    while peeled < _PEEL:  # a pass removes exactly one level of (well-formed) nesting
        shape, found = _INNERMOST.subn(b"", shape)
        if not found:
            break  # unbalanced: what is left is measured as it stands
        peeled += 1
        if not shape:
            return peeled > limit
    if not shape:
        return peeled > limit
    depth: int = max(map(operator.sub, accumulate(shape), range(1, len(shape) + 1)))
    return depth + peeled > limit


class _BodyRefused(Exception):
    """Why the guard refused a body (turned into the matching ``HttpError`` by the guard)."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.details = status, code, details
        self.unread = True  # some of the body may still be on its way


@dataclass(frozen=True, slots=True)
class _Rule:
    prefixes: tuple[str, ...]
    limits: BodyLimits
    refuse: Refusal


class BodyGuard:
    """ASGI middleware holding every request body to ``BodyLimits`` before the app sees it.

    ``rules`` are ``(prefixes, limits, refuse)`` for the parts of the app mounted under those
    prefixes (an adapter's own limits and its protocol's error shape); every other path gets
    ``limits`` and ``refuse``. ``make_error(status, code, message, **details)`` builds the
    exception each ``refuse`` is handed (the toolkit's ``HttpError``).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        limits: BodyLimits,
        refuse: Refusal,
        make_error: Callable[..., Exception],
        rules: Sequence[tuple[Sequence[str], BodyLimits, Refusal]] = (),
    ) -> None:
        self.app = app
        self._default = _Rule((), limits, refuse)
        self._rules = tuple(_Rule(tuple(p), lim, ref) for p, lim, ref in rules)
        self._make_error = make_error

    def _rule(self, path: str) -> _Rule:
        for rule in self._rules:
            if any(covers(p, path) for p in rule.prefixes):
                return rule
        return self._default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = chunked = media = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
            elif name == b"transfer-encoding":
                chunked = value
            elif name == b"content-type":
                media = value
        if length is None and chunked is None:  # HTTP/1.1: no body at all
            await self.app(scope, receive, send)
            return
        rule = self._rule(scope["path"])
        try:
            first, body = await self._read(receive, rule.limits, length)
            if body:
                self._check(body, media, rule.limits)
        except _BodyRefused as refused:
            if refused.status == 413 and refused.unread:
                await _linger(receive, rule.limits)
            await self._answer(scope, receive, send, rule, refused)
            return
        scope[BODY_KEY] = body
        await self.app(scope, _Replay(first, receive), send)

    async def _read(self, receive: Receive, limits: BodyLimits,
                    length: bytes | None) -> tuple[Message, bytes]:
        """The first ``http.request`` message, with the whole body joined into it."""
        limit = limits.max_bytes
        if length is not None:
            if not length.isdigit():
                raise _BodyRefused(400, "invalid_content_length",
                                   f"content-length must be a byte count, not {length!r}")
            if int(length) > limit:
                raise _too_large(limit)
        loop = asyncio.get_running_loop()
        start = loop.time()
        try:
            async with asyncio.timeout(start + limits.timeout) as deadline:
                message = await receive()
                body = message.get("body", b"")
                if not message.get("more_body", False) or message["type"] != "http.request":
                    if len(body) > limit:
                        raise _too_large(limit, unread=False)
                    return message, body
                chunks = [body]
                size = len(body)
                while message.get("more_body", False):
                    if size > limit:
                        raise _too_large(limit)
                    deadline.reschedule(start + limits.timeout + size / limits.min_rate)
                    message = await receive()
                    if message["type"] != "http.request":  # the client went away
                        break
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    chunks.append(chunk)
                if size > limit:
                    raise _too_large(limit, unread=message.get("more_body", False))
        except TimeoutError:
            raise _BodyRefused(
                408, "body_timeout",
                f"the body did not arrive within {limits.timeout:g} seconds (a large body "
                f"gets one more second for every {limits.min_rate} bytes received)",
                timeout=limits.timeout) from None
        body = b"".join(chunks)
        return {"type": "http.request", "body": body, "more_body": False}, body

    @staticmethod
    def _check(body: bytes, media: bytes | None, limits: BodyLimits) -> None:
        shown = media.decode("latin-1") if media is not None else ""
        if not is_json_media(shown):
            raise _BodyRefused(415, "unsupported_media_type",
                               f"send application/json, not {shown or 'no content type'!r}")
        if nests_deeper(body, limits.max_depth):
            raise _BodyRefused(422, "too_deeply_nested",
                               f"the body nests deeper than {limits.max_depth} levels",
                               max_depth=limits.max_depth)

    async def _answer(self, scope: Scope, receive: Receive, send: Send, rule: _Rule,
                      refused: _BodyRefused) -> None:
        error = self._make_error(refused.status, refused.code, str(refused), **refused.details)
        response = await rule.refuse(Request(scope, receive), error)
        response.headers["connection"] = "close"  # the rest of the body is never read
        await response(scope, _ended, send)


LINGER_FACTOR = 16
LINGER_SECONDS = 5.0


async def _linger(receive: Receive, limits: BodyLimits) -> None:
    """Read and drop up to ``LINGER_FACTOR`` times ``max_bytes`` more of a refused body, for
    ``LINGER_SECONDS`` at most (the body deadline, if shorter), as servers' lingering close.

    A client that sends its whole body before reading the answer (most do) would otherwise
    meet a reset instead of the 413: closing a socket with unread input resets it. What
    arrives is discarded as it comes, so this holds no more memory than one chunk; a body
    larger still is cut off.
    """
    budget = LINGER_FACTOR * limits.max_bytes
    try:
        async with asyncio.timeout(min(limits.timeout, LINGER_SECONDS)):
            while budget > 0:
                message = await receive()
                if message["type"] != "http.request":
                    return
                budget -= len(message.get("body", b""))
                if not message.get("more_body", False):
                    return
    except TimeoutError:
        return


def _too_large(limit: int, *, unread: bool = True) -> _BodyRefused:
    refused = _BodyRefused(413, "body_too_large", f"the body is larger than {limit} bytes",
                           limit=limit)
    refused.unread = unread
    return refused


async def _ended() -> Message:
    return {"type": "http.disconnect"}


class _Replay:
    """A ``receive`` that hands the app the body the guard read, then the client's own."""

    __slots__ = ("_first", "_receive")

    def __init__(self, first: Message, receive: Receive) -> None:
        self._first: Message | None = first
        self._receive = receive

    async def __call__(self) -> Message:
        first = self._first
        if first is not None:
            self._first = None
            return first
        return await self._receive()
