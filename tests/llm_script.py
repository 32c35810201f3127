"""A scripted Chat Completions model for respx: the one part of a tool loop a test cannot run.

``Model`` answers each request with the next reply of its script (or, given a function, with
what the function makes of the request's messages: the same answer in any process, which is
what a restarted server needs). It streams when the request asks to, as the service does:
text deltas, tool-call fragments keyed by index, a finish reason, then ``[DONE]``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx
import respx

BASE_URL = "https://llm.test/v1"

Reply = dict[str, Any]
Script = Callable[[list[dict[str, Any]]], Reply]
Serve = Callable[..., "Model"]


def call(call_id: str, name: str, arguments: Any = None, /, **kwargs: Any) -> dict[str, Any]:
    """A tool call of a reply; ``arguments`` (a dict, or a raw string) or keyword arguments."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or kwargs)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def reply(text: str | None = None, *calls: dict[str, Any], tokens: int = 0) -> Reply:
    """An assistant message: its text and its tool calls."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    found: Reply = {"message": message}
    if tokens:
        found["usage"] = {"prompt_tokens": tokens, "completion_tokens": tokens,
                          "total_tokens": 2 * tokens}
    return found


class Model:
    """A respx side effect: ``mock.post("/chat/completions").mock(side_effect=Model(...))``."""

    def __init__(self, script: Iterable[Reply] | Script) -> None:
        self._next = script if callable(script) else _in_order(list(script))
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        found = self._next(body["messages"])
        if body.get("stream"):
            return httpx.Response(200, content=_sse(found),
                                  headers={"content-type": "text/event-stream"})
        completion = {"id": "cmpl-1", "object": "chat.completion",
                      "choices": [{"index": 0, "message": found["message"],
                                   "finish_reason": _finish(found)}]}
        if "usage" in found:
            completion["usage"] = found["usage"]
        return httpx.Response(200, json=completion)

    def tool_names(self, request: int = -1) -> list[str]:
        """The names of the tools offered in one request."""
        return [t["function"]["name"] for t in self.requests[request].get("tools", ())]


def _in_order(replies: list[Reply]) -> Callable[[list[dict[str, Any]]], Reply]:
    def next_reply(messages: list[dict[str, Any]]) -> Reply:
        if not replies:
            raise AssertionError(f"the model was called once more than scripted: {messages}")
        return replies.pop(0)
    return next_reply


def _finish(found: Reply) -> str:
    return "tool_calls" if found["message"].get("tool_calls") else "stop"


def _sse(found: Reply) -> bytes:
    message = found["message"]
    chunks: list[dict[str, Any]] = []
    if message.get("content"):
        text = message["content"]
        for part in (text[: len(text) // 2], text[len(text) // 2:]):
            if part:
                chunks.append({"choices": [{"index": 0, "delta": {"content": part}}]})
    for index, tool_call in enumerate(message.get("tool_calls", ())):
        raw = tool_call["function"]["arguments"]
        head = {"index": index, "id": tool_call["id"], "type": "function",
                "function": {"name": tool_call["function"]["name"], "arguments": raw[:3]}}
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [head]}}]})
        tail = {"index": index, "function": {"arguments": raw[3:]}}
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [tail]}}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": _finish(found)}]})
    if "usage" in found:
        chunks.append({"choices": [], "usage": found["usage"]})
    events = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
    return (events + "data: [DONE]\n\n").encode()


@contextlib.contextmanager
def mocked() -> Iterator[Serve]:
    """respx in place of the model service: ``serve(*replies)`` or ``serve(script)`` routes
    ``/chat/completions`` to a new ``Model`` and returns it."""
    with respx.mock(base_url=BASE_URL) as router:
        def serve(*script: Any) -> Model:
            model = Model(script[0] if len(script) == 1 and callable(script[0]) else script)
            router.post("/chat/completions").mock(side_effect=model)
            return model
        yield serve
