"""The Chat Completions wire format: our messages to request JSON, response JSON to contents.

Pure translation with typed msgspec Structs for what we read; this module must never do I/O
or touch a session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from checkflow.agents._messages import (
    ChatMessage,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    UserInputRequestContent,
)
from checkflow.agents._types import UsageDetails
from checkflow.errors import AgentError, AgentServiceError

__all__ = [
    "ChatCompletion",
    "ChatCompletionChunk",
    "ToolCallAccumulator",
    "Usage",
    "message_contents",
    "to_wire_messages",
]


class _Function(msgspec.Struct):
    name: str = ""
    arguments: str = ""


class _ToolCall(msgspec.Struct):
    id: str
    function: _Function
    type: str = "function"


class _Message(msgspec.Struct):
    role: str = "assistant"
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(msgspec.Struct):
    message: _Message
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = None


class _CompletionDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class Usage(msgspec.Struct):
    """``usage`` of a completion (or of a stream's last chunk, with ``include_usage``)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None

    def details(self) -> UsageDetails:
        """The counts as an ``AgentResponse`` carries them."""
        cached = self.prompt_tokens_details.cached_tokens if self.prompt_tokens_details else 0
        reasoning = (self.completion_tokens_details.reasoning_tokens
                     if self.completion_tokens_details else 0)
        total = self.total_tokens
        return UsageDetails(self.prompt_tokens, self.completion_tokens,
                            self.prompt_tokens + self.completion_tokens if total is None
                            else total, cached or 0, reasoning or 0)


class ChatCompletion(msgspec.Struct):
    """A non-streamed response (only the fields we use)."""

    choices: list[_Choice]
    usage: Usage | None = None


class _DeltaToolCall(msgspec.Struct):
    index: int = 0
    id: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_DeltaToolCall] | None = None


class _ChunkChoice(msgspec.Struct):
    delta: _Delta
    finish_reason: str | None = None


class ChatCompletionChunk(msgspec.Struct):
    """One ``data:`` event of a streamed response."""

    choices: list[_ChunkChoice] = []
    usage: Usage | None = None

    @property
    def delta(self) -> _Delta | None:
        """The first choice's delta; ``None`` for a chunk without choices (e.g. usage only)."""
        return self.choices[0].delta if self.choices else None


def to_wire_messages(
    instructions: str | None, messages: Sequence[ChatMessage]
) -> list[dict[str, Any]]:
    """Chat Completions ``messages``: function results become ``tool`` messages of their own."""
    wire: list[dict[str, Any]] = []
    if instructions:
        wire.append({"role": "system", "content": instructions})
    for message in messages:
        text = message.text
        calls = [c for c in message.contents if isinstance(c, FunctionCallContent)]
        results = [c for c in message.contents if isinstance(c, FunctionResultContent)]
        if any(isinstance(c, UserInputRequestContent) for c in message.contents):
            raise AgentError("a UserInputRequestContent cannot be sent to Chat Completions")
        # Tool results must directly follow the assistant message that called the tools.
        wire.extend(
            {"role": "tool", "tool_call_id": r.call_id, "content": _result_text(r.result)}
            for r in results
        )
        if calls:
            wire.append(
                {
                    "role": "assistant",
                    "content": text or None,
                    "tool_calls": [_wire_call(call) for call in calls],
                }
            )
        elif text or not results:
            wire.append({"role": message.role, "content": text})
    return wire


def message_contents(message: _Message) -> list[Content]:
    """The contents of a response message: its text, then its tool calls."""
    contents: list[Content] = []
    if message.content:
        contents.append(TextContent(message.content))
    for call in message.tool_calls or ():
        contents.append(_function_call(call.id, call.function.name, call.function.arguments))
    return contents


class ToolCallAccumulator:
    """Assembles streamed tool-call fragments (keyed by ``index``) into whole calls."""

    def __init__(self) -> None:
        self._calls: dict[int, list[str]] = {}

    def add(self, fragments: Sequence[_DeltaToolCall]) -> None:
        """Fold one chunk's fragments in: the id once, name and arguments concatenated."""
        for fragment in fragments:
            call = self._calls.setdefault(fragment.index, ["", "", ""])
            if fragment.id:
                call[0] = fragment.id
            if fragment.function is not None:
                call[1] += fragment.function.name
                call[2] += fragment.function.arguments

    def calls(self) -> list[Content]:
        """The assembled calls, in ``index`` order."""
        return [_function_call(*self._calls[index]) for index in sorted(self._calls)]


def _wire_call(call: FunctionCallContent) -> dict[str, Any]:
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": msgspec.json.encode(call.arguments).decode()},
    }


def _result_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    try:
        return msgspec.json.encode(result).decode()
    except (TypeError, msgspec.EncodeError) as exc:
        raise AgentError(
            f"a function result must be a str or JSON-encodable, not {type(result).__name__}"
        ) from exc


def _function_call(call_id: str, name: str, arguments: str) -> FunctionCallContent:
    try:
        parsed = msgspec.json.decode(arguments or "{}")
    except msgspec.DecodeError as exc:
        raise AgentServiceError(
            f"the model called {name!r} with arguments that are not JSON: {arguments!r}"
        ) from exc
    if not isinstance(parsed, dict):
        raise AgentServiceError(
            f"the model called {name!r} with arguments that are not a JSON object: {arguments!r}"
        )
    return FunctionCallContent(call_id, name, parsed)
