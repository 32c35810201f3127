"""Server-sent events for the native API and adapters: framing, keep-alive pings, clean ends.

``sse_response`` turns an async iterator of ``ServerSentEvent``s into a streaming response
that sends a ``: ping`` comment whenever no event came for ``ping_interval`` seconds (so
proxies and clients keep an idle stream open while a superstep runs long), writes ``id:``
lines from each event's id, and, when the client disconnects or the response ends, closes the
iterator, which for a hosted run cancels it at its next safe point. The next event is awaited
in a task of its own and never cancelled by a ping, so a ping never interrupts a run. This
module must never know what the events mean.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
from starlette.responses import StreamingResponse

__all__ = ["ServerSentEvent", "sse_response"]

_encoder = msgspec.json.Encoder()
PING = b": ping\n\n"


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One event: ``data`` (JSON-encoded unless ``str`` or ``bytes``), optional name and id."""

    data: Any
    event: str | None = None
    id: str | int | None = None

    def encode(self) -> bytes:
        """The event's wire form, ending with the blank line that dispatches it."""
        parts: list[bytes] = []
        if self.event is not None:
            parts.append(b"event: " + _single_line(self.event) + b"\n")
        if self.id is not None:
            parts.append(b"id: " + _single_line(str(self.id)) + b"\n")
        data = self.data
        payload = (data if isinstance(data, bytes) else data.encode()
                   if isinstance(data, str) else _encoder.encode(data))
        parts.extend(b"data: " + line + b"\n" for line in payload.split(b"\n"))
        return b"".join(parts) + b"\n"


def _single_line(text: str) -> bytes:
    if "\n" in text or "\r" in text:
        raise ValueError(f"an SSE field must be one line, got {text!r}")
    return text.encode()


def sse_response(
    events: AsyncIterator[ServerSentEvent | bytes],
    *,
    ping_interval: float | None = 15.0,
    headers: Mapping[str, str] | None = None,
    status_code: int = 200,
) -> StreamingResponse:
    """A ``text/event-stream`` response of ``events``, with pings while idle.

    ``bytes`` items are sent as they are (already framed). ``ping_interval=None`` sends no
    pings. The iterator is closed (``aclose``) however the response ends.
    """
    all_headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no", **(headers or {})}
    return StreamingResponse(_frames(events, ping_interval), status_code=status_code,
                             media_type="text/event-stream", headers=all_headers)


async def _frames(
    events: AsyncIterator[ServerSentEvent | bytes], ping_interval: float | None
) -> AsyncIterator[bytes]:
    step: asyncio.Future[ServerSentEvent | bytes] | None = None
    try:
        while True:
            if step is None:
                step = asyncio.ensure_future(anext(events))
            if not (await asyncio.wait({step}, timeout=ping_interval))[0]:
                yield PING
                continue
            finished, step = step, None
            # The end is read, not raised here: raised, its traceback would hold this frame,
            # which holds the step, which holds the error (a cycle left to the collector).
            if not finished.cancelled() and isinstance(finished.exception(),
                                                       StopAsyncIteration):
                return
            item = finished.result()
            yield item if isinstance(item, bytes) else item.encode()
    finally:
        if step is not None and not step.done():
            step.cancel()
            with contextlib.suppress(BaseException):
                await step
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(aclose())
