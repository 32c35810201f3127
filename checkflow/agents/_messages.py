"""Chat messages and their contents: the data every agent reads and writes.

Messages are immutable ``msgspec.Struct``s, registered with the one state codec so they can live
in ``AgentSession.state`` and in snapshot state. This module must never talk to a model service
or hold per-conversation state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import msgspec

from checkflow.state import register_state_type

__all__ = [
    "AgentInput",
    "ChatMessage",
    "Content",
    "FunctionCallContent",
    "FunctionResultContent",
    "Role",
    "TextContent",
    "UserInputRequestContent",
    "normalize_messages",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
_ROLES: frozenset[str] = frozenset(("system", "user", "assistant", "tool"))


class TextContent(msgspec.Struct, frozen=True):
    """Plain text written by a user, a system prompt or a model."""

    text: str


class FunctionCallContent(msgspec.Struct, frozen=True):
    """A model asks its caller to run the function ``name`` with ``arguments``.

    ``call_id`` ties the call to the ``FunctionResultContent`` that answers it.
    """

    call_id: str
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


class FunctionResultContent(msgspec.Struct, frozen=True):
    """The answer to a ``FunctionCallContent`` or a ``UserInputRequestContent`` (same id)."""

    call_id: str
    result: Any = None


class UserInputRequestContent(msgspec.Struct, frozen=True):
    """An agent pauses for a human: ``data`` says what it needs.

    The next run must carry a ``FunctionResultContent`` whose ``call_id`` is ``request_id``.
    """

    request_id: str
    data: Any = None


Content: TypeAlias = (
    TextContent | FunctionCallContent | FunctionResultContent | UserInputRequestContent
)
_CONTENT_TYPES = (TextContent, FunctionCallContent, FunctionResultContent, UserInputRequestContent)


class ChatMessage:
    """One turn of a conversation: a role and its contents.

    ``ChatMessage("user", "hi")`` is shorthand for ``ChatMessage("user", [TextContent("hi")])``.
    A message is immutable (contents are kept as a tuple), so it can be shared freely.
    """

    __slots__ = ("contents", "role")

    role: Role
    contents: tuple[Content, ...]

    def __init__(self, role: Role, contents: str | Content | Sequence[Content] = ()) -> None:
        if role not in _ROLES:
            raise ValueError(f"role must be one of {sorted(_ROLES)}, not {role!r}")
        if isinstance(contents, str):
            items: tuple[Content, ...] = (TextContent(contents),)
        elif isinstance(contents, _CONTENT_TYPES):
            items = (contents,)
        else:
            items = tuple(contents)
        for item in items:
            if not isinstance(item, _CONTENT_TYPES):
                raise TypeError(f"a ChatMessage content cannot be a {type(item).__name__}")
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "contents", items)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ChatMessage is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChatMessage):
            return NotImplemented
        return self.role == other.role and self.contents == other.contents

    __hash__ = None  # type: ignore[assignment]  # contents may hold dicts

    def __repr__(self) -> str:
        return f"ChatMessage(role={self.role!r}, contents={list(self.contents)!r})"

    @property
    def text(self) -> str:
        """The text contents joined with no separator (as a model streamed them)."""
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))


AgentInput: TypeAlias = str | ChatMessage | Sequence[str | ChatMessage]


def normalize_messages(messages: AgentInput) -> list[ChatMessage]:
    """Turn what ``Agent.run`` accepts (a str, a message, or a list of them) into messages.

    A plain str is a user message.
    """
    if isinstance(messages, str | ChatMessage):
        messages = [messages]
    result: list[ChatMessage] = []
    for item in messages:
        if isinstance(item, str):
            result.append(ChatMessage("user", item))
        elif isinstance(item, ChatMessage):
            result.append(item)
        else:
            raise TypeError(f"an agent accepts str or ChatMessage, not {type(item).__name__}")
    return result


def _encode_message(message: ChatMessage) -> dict[str, Any]:
    return {"role": message.role, "contents": list(message.contents)}


def _decode_message(value: dict[str, Any]) -> ChatMessage:
    return ChatMessage(value["role"], value["contents"])


for _cls in (TextContent, FunctionCallContent, FunctionResultContent, UserInputRequestContent):
    register_state_type(_cls, type_id=f"checkflow.{_cls.__name__}")
register_state_type(
    ChatMessage, type_id="checkflow.ChatMessage", encoder=_encode_message, decoder=_decode_message
)
