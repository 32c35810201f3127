"""What an agent run yields: a whole ``AgentResponse`` or a stream of ``AgentResponseUpdate``s.

Plain value objects, registered with the state codec because workflows carry them as messages
(and so into snapshots). This module must never run an agent or hold per-conversation state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from checkflow.agents._messages import (
    ChatMessage,
    Content,
    FunctionCallContent,
    Role,
    TextContent,
    UserInputRequestContent,
)
from checkflow.state import register_state_type

__all__ = ["AgentResponse", "AgentResponseUpdate"]


@register_state_type(type_id="checkflow.AgentResponseUpdate")
@dataclass(frozen=True, slots=True)
class AgentResponseUpdate:
    """One piece of a streamed response: usually a text delta, or whole function calls."""

    contents: tuple[Content, ...] = ()
    role: Role = "assistant"
    author_name: str | None = None

    @property
    def text(self) -> str:
        """The text in this piece."""
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))


@register_state_type(type_id="checkflow.AgentResponse")
@dataclass(frozen=True, slots=True)
class AgentResponse:
    """The messages one run produced (usually one assistant message).

    ``text`` joins their text; ``user_input_requests`` and ``function_calls`` list what the
    agent needs from its caller before it can continue.
    """

    messages: list[ChatMessage] = field(default_factory=list)
    author_name: str | None = None

    @property
    def text(self) -> str:
        """The text of every message, joined."""
        return "".join(m.text for m in self.messages)

    @property
    def function_calls(self) -> list[FunctionCallContent]:
        """Function calls the caller is asked to run and answer."""
        return [c for m in self.messages for c in m.contents if isinstance(c, FunctionCallContent)]

    @property
    def user_input_requests(self) -> list[UserInputRequestContent]:
        """Requests for human input the next run must answer."""
        return [
            c for m in self.messages for c in m.contents if isinstance(c, UserInputRequestContent)
        ]

    @classmethod
    def from_updates(cls, updates: Iterable[AgentResponseUpdate]) -> AgentResponse:
        """Merge a stream into whole messages: adjacent text deltas of one role become one text.

        A new message starts whenever the role changes.
        """
        messages: list[ChatMessage] = []
        role: Role | None = None
        contents: list[Content] = []
        author: str | None = None
        for update in updates:
            author = author or update.author_name
            if role is not None and update.role != role:
                messages.append(ChatMessage(role, _merge_text(contents)))
                contents = []
            role = update.role
            contents.extend(update.contents)
        if role is not None:
            messages.append(ChatMessage(role, _merge_text(contents)))
        return cls(messages=messages, author_name=author)

    def to_updates(self) -> list[AgentResponseUpdate]:
        """The response as a stream, one update per message (for agents that do not stream)."""
        return [AgentResponseUpdate(m.contents, m.role, self.author_name) for m in self.messages]


def _merge_text(contents: Sequence[Content]) -> list[Content]:
    merged: list[Content] = []
    for item in contents:
        if isinstance(item, TextContent) and merged and isinstance(merged[-1], TextContent):
            merged[-1] = TextContent(merged[-1].text + item.text)
        else:
            merged.append(item)
    return merged
