"""``OpenAIChatAgent``: an agent backed by any OpenAI-compatible Chat Completions endpoint.

Talks HTTP through ``httpx`` (no ``openai`` package), streams over server-sent events, and keeps
the conversation in ``session.state``. An injected ``httpx.AsyncClient`` is used as is;
otherwise one client is created per event loop (an httpx client must never be shared across
loops). This module must never keep per-conversation state on the agent.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final

import httpx
import msgspec

from checkflow.agents._base import BaseAgent, append_history, get_history
from checkflow.agents._messages import ChatMessage, Content, TextContent
from checkflow.agents._openai_wire import (
    ChatCompletion,
    ChatCompletionChunk,
    ToolCallAccumulator,
    message_contents,
    to_wire_messages,
)
from checkflow.agents._types import AgentResponse, AgentResponseUpdate
from checkflow.errors import AgentServiceError
from checkflow.sessions import AgentSession

__all__ = ["OpenAIChatAgent"]

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
_DEFAULT_TIMEOUT: Final = httpx.Timeout(120.0, connect=10.0)
_COMPLETION: Final = msgspec.json.Decoder(ChatCompletion)
_CHUNK: Final = msgspec.json.Decoder(ChatCompletionChunk)


class OpenAIChatAgent(BaseAgent):
    """Chat Completions as an ``Agent``: history in the session, streaming, tool calls.

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``.
    ``tools`` (Chat Completions tool definitions) lets the model answer with
    ``FunctionCallContent``s; send their ``FunctionResultContent``s in the next run.
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
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__(name or model)
        self.model = model
        self.instructions = instructions
        self.tools = [dict(tool) for tool in tools or ()]
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

    async def _respond(self, messages: list[ChatMessage], session: AgentSession) -> AgentResponse:
        body = self._body([*get_history(session), *messages], stream=False)
        try:
            response = await self._client().post(self._url, json=body, headers=self._headers())
        except httpx.HTTPError as exc:
            raise AgentServiceError(f"{self._url}: request failed: {exc!r}") from exc
        if response.is_error:
            raise _service_error(response)
        try:
            completion = _COMPLETION.decode(response.content)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise AgentServiceError(f"{self._url}: malformed completion: {exc}") from exc
        if not completion.choices:
            raise AgentServiceError(f"{self._url}: the completion has no choices")
        reply = ChatMessage("assistant", message_contents(completion.choices[0].message))
        append_history(session, [*messages, reply])
        return AgentResponse(messages=[reply], author_name=self.name)

    async def _stream(
        self, messages: list[ChatMessage], session: AgentSession
    ) -> AsyncIterator[AgentResponseUpdate]:
        body = self._body([*get_history(session), *messages], stream=True)
        text: list[str] = []
        tool_calls = ToolCallAccumulator()
        try:
            async with self._client().stream(
                "POST", self._url, json=body, headers=self._headers()
            ) as response:
                if response.is_error:
                    await response.aread()
                    raise _service_error(response)
                async for chunk in _sse_chunks(response, self._url):
                    delta = chunk.delta
                    if delta is None:
                        continue
                    if delta.tool_calls:
                        tool_calls.add(delta.tool_calls)
                    if delta.content:
                        text.append(delta.content)
                        piece = TextContent(delta.content)
                        yield AgentResponseUpdate((piece,), "assistant", self.name)
        except httpx.HTTPError as exc:
            raise AgentServiceError(f"{self._url}: streaming request failed: {exc!r}") from exc
        calls = tool_calls.calls()
        if calls:
            yield AgentResponseUpdate(tuple(calls), "assistant", self.name)
        contents: list[Content] = [TextContent("".join(text))] if text else []
        append_history(session, [*messages, ChatMessage("assistant", [*contents, *calls])])

    def _body(self, messages: Sequence[ChatMessage], *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire_messages(self.instructions, messages),
        }
        if self.tools:
            body["tools"] = self.tools
        if stream:
            body["stream"] = True
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


async def _sse_chunks(response: httpx.Response, url: str) -> AsyncIterator[ChatCompletionChunk]:
    """The ``data:`` events of a server-sent event stream, up to ``[DONE]``."""
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        payload = line[len("data:") :].strip()
        if payload == "[DONE]":
            return
        try:
            yield _CHUNK.decode(payload)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise AgentServiceError(f"{url}: malformed stream event {payload!r}: {exc}") from exc


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
