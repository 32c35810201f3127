"""``OpenAIChatAgent``: an agent backed by any OpenAI-compatible Chat Completions endpoint.

Talks HTTP through ``httpx`` (no ``openai`` package), streams over server-sent events, and keeps
the conversation in ``session.state``. A 429, a 5xx or a connection failure is retried with
exponential backoff and full jitter (``Retry-After`` honoured), only before any part of a reply
was received; a reply cut short, or an error the stream reports, raises ``AgentServiceError``
and nothing of it is saved. An injected ``httpx.AsyncClient`` is used as is;
otherwise one client is created per event loop (an httpx client must never be shared across
loops). This module must never keep per-conversation state on the agent.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
import weakref
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Final

import httpx
import msgspec

from checkflow.agents._messages import ChatMessage, Content, TextContent
from checkflow.agents._openai_wire import (
    ChatCompletion,
    ChatCompletionChunk,
    ToolCallAccumulator,
    message_contents,
    to_wire_messages,
)
from checkflow.agents._tool_loop import ModelReply, ToolCallingAgent, ToolLike
from checkflow.agents._types import AgentResponseUpdate, UsageDetails
from checkflow.errors import AgentServiceError

__all__ = ["OpenAIChatAgent"]

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
_DEFAULT_TIMEOUT: Final = httpx.Timeout(120.0, connect=10.0)
_COMPLETION: Final = msgspec.json.Decoder(ChatCompletion)
_CHUNK: Final = msgspec.json.Decoder(ChatCompletionChunk)
_RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
_MAX_RETRY_AFTER: Final = 60.0
_sleep = asyncio.sleep  # the one place retries wait (tests record it)


class OpenAIChatAgent(ToolCallingAgent):
    """Chat Completions as an ``Agent``: history in the session, streaming, tool calls.

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``.
    ``tools`` are ``@tool`` functions (run here, in a loop of at most ``max_tool_rounds``
    rounds; see ``ToolCallingAgent``) or Chat Completions tool definitions, whose calls end
    the run as ``FunctionCallContent``s: send their ``FunctionResultContent``s in the next run.
    ``max_retries`` (default 2; 0 disables) more attempts follow a 429, 5xx or connection
    failure, each after ``retry_backoff * 2**attempt`` seconds at most (full jitter), or the
    service's ``Retry-After`` (capped at a minute).
    """

    def __init__(
        self,
        model: str,
        *,
        name: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        instructions: str | None = None,
        tools: Iterable[ToolLike] | None = None,
        max_tool_rounds: int = 10,
        max_retries: int = 2,
        retry_backoff: float = 0.5,
    ) -> None:
        if max_retries < 0 or retry_backoff < 0:
            raise ValueError("max_retries and retry_backoff must not be negative")
        super().__init__(name or model, tools=tools or (), max_tool_rounds=max_tool_rounds)
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.model = model
        self.instructions = instructions
        base = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self._url = base.rstrip("/") + "/chat/completions"
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._injected = http_client
        self._per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    async def aclose(self) -> None:
        """Close the client this agent created for the running loop (an injected one is yours)."""
        client = self._per_loop.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    async def _complete(self, history: Sequence[ChatMessage], tools: list[dict[str, Any]],
                        tool_choice: str | None, stream: bool
                        ) -> AsyncIterator[AgentResponseUpdate | ModelReply]:
        body = self._body(history, tools, tool_choice, stream=stream)
        if stream:
            async for item in self._stream_call(body):
                yield item
        else:
            yield await self._call(body)

    async def _call(self, body: dict[str, Any]) -> ModelReply:
        """One completion, retried while nothing of it was received."""
        for attempt in range(self.max_retries + 1):
            try:
                response = await self._client().post(self._url, json=body,
                                                     headers=self._headers())
            except httpx.TransportError as exc:
                if attempt < self.max_retries:
                    await _sleep(self._delay(attempt, None))
                    continue
                raise AgentServiceError(f"{self._url}: request failed: {exc!r}") from exc
            except httpx.HTTPError as exc:
                raise AgentServiceError(f"{self._url}: request failed: {exc!r}") from exc
            if response.status_code in _RETRY_STATUSES and attempt < self.max_retries:
                await _sleep(self._delay(attempt, response))
                continue
            break
        if response.is_error:
            raise _service_error(response)
        try:
            completion = _COMPLETION.decode(response.content)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise AgentServiceError(f"{self._url}: malformed completion: {exc}") from exc
        if not completion.choices:
            raise AgentServiceError(f"{self._url}: the completion has no choices")
        reply = ChatMessage("assistant", message_contents(completion.choices[0].message))
        usage = None if completion.usage is None else completion.usage.details()
        return ModelReply(reply, usage)

    async def _stream_call(self, body: dict[str, Any]
                           ) -> AsyncIterator[AgentResponseUpdate | ModelReply]:
        """One streamed completion: its updates, then the whole reply."""
        text: list[str] = []
        tool_calls = ToolCallAccumulator()
        usage: list[UsageDetails] = []
        attempt = 0
        while True:
            try:
                async with self._client().stream(
                    "POST", self._url, json=body, headers=self._headers()
                ) as response:
                    if response.status_code in _RETRY_STATUSES and attempt < self.max_retries:
                        await response.aread()
                        delay = self._delay(attempt, response)
                    elif response.is_error:
                        await response.aread()
                        raise _service_error(response)
                    else:
                        async for update in self._read_stream(response, text, tool_calls,
                                                              usage):
                            yield update
                        break
            except httpx.TransportError as exc:
                if text or tool_calls.calls() or attempt >= self.max_retries:
                    raise AgentServiceError(
                        f"{self._url}: streaming request failed: {exc!r}") from exc
                delay = self._delay(attempt, None)  # nothing received yet: try again
            except httpx.HTTPError as exc:
                raise AgentServiceError(
                    f"{self._url}: streaming request failed: {exc!r}") from exc
            attempt += 1
            await _sleep(delay)
        calls = tool_calls.calls()
        if calls:
            yield AgentResponseUpdate(tuple(calls), "assistant", self.name)
        if usage:
            yield AgentResponseUpdate((), "assistant", self.name, usage[-1])
        contents: list[Content] = [TextContent("".join(text))] if text else []
        yield ModelReply(ChatMessage("assistant", [*contents, *calls]),
                         usage[-1] if usage else None)

    async def _read_stream(
        self, response: httpx.Response, text: list[str], tool_calls: ToolCallAccumulator,
        usage: list[UsageDetails],
    ) -> AsyncIterator[AgentResponseUpdate]:
        """The text updates of one streamed reply (tool calls accumulate in ``tool_calls``,
        the usage the last chunk reports in ``usage``)."""
        async for chunk in _sse_chunks(response, self._url):
            if chunk.usage is not None:
                usage.append(chunk.usage.details())
            delta = chunk.delta
            if delta is None:
                continue
            if delta.tool_calls:
                tool_calls.add(delta.tool_calls)
            if delta.content:
                text.append(delta.content)
                yield AgentResponseUpdate((TextContent(delta.content),), "assistant", self.name)

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        """How long to wait before retry ``attempt + 1``: ``Retry-After``, else full jitter."""
        after = None if response is None else _retry_after(response)
        if after is not None:
            return after
        return random.uniform(0, self.retry_backoff * 2**attempt)

    def _body(self, messages: Sequence[ChatMessage], tools: list[dict[str, Any]],
              tool_choice: str | None, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire_messages(self.instructions, messages),
        }
        if tools:
            body["tools"] = tools
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}  # a last chunk with the usage
        return body

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _client(self) -> httpx.AsyncClient:
        if self._injected is not None:
            return self._injected
        loop = asyncio.get_running_loop()
        client = self._per_loop.get(loop)
        if client is None or client.is_closed:
            client = self._per_loop[loop] = httpx.AsyncClient(timeout=_DEFAULT_TIMEOUT)
        return client


def _retry_after(response: httpx.Response) -> float | None:
    """The service's ``Retry-After`` in seconds (a number or an HTTP date), capped."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


async def _sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """``(event, data)`` per server-sent event; ``data:`` lines of one event are joined."""
    event, data = "message", list[str]()
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if data:
        yield event, "\n".join(data)


def _object_keys(payload: str) -> list[str]:
    parsed = msgspec.json.decode(payload)
    return list(parsed) if isinstance(parsed, dict) else []


def _stream_error(url: str, payload: str) -> AgentServiceError:
    try:
        parsed = msgspec.json.decode(payload)
    except msgspec.DecodeError:
        parsed = None
    error = parsed.get("error", parsed) if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return AgentServiceError(f"{url}: the stream reported an error: {message or payload[:500]}")


async def _sse_chunks(response: httpx.Response, url: str) -> AsyncIterator[ChatCompletionChunk]:
    """The chunks of a streamed reply, up to ``[DONE]``; a stream that ends without it (or
    a final ``finish_reason``), or reports an error, raises ``AgentServiceError``."""
    finished = False
    async for event, payload in _sse_events(response):
        if event == "error":
            raise _stream_error(url, payload)
        if payload.strip() == "[DONE]":
            return
        try:
            chunk = _CHUNK.decode(payload)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise AgentServiceError(f"{url}: malformed stream event {payload!r}: {exc}") from exc
        if not chunk.choices and "error" in _object_keys(payload):
            raise _stream_error(url, payload)  # {"error": {...}} in a data: line
        finished = finished or any(c.finish_reason for c in chunk.choices)
        yield chunk
    if not finished:
        raise AgentServiceError(f"{url}: the stream ended before the reply was complete")


def _service_error(response: httpx.Response) -> AgentServiceError:
    """An error naming the status and the service's own message when it gave one."""
    detail = response.text[:500]
    try:
        error = msgspec.json.decode(response.content)
        if isinstance(error, dict) and isinstance(error.get("error"), dict):
            detail = str(error["error"].get("message", detail))
    except msgspec.DecodeError:
        pass
    return AgentServiceError(
        f"{response.request.url} answered HTTP {response.status_code}: {detail}",
        status_code=response.status_code,
    )
