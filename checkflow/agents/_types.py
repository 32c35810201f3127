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

__all__ = ["AgentResponse", "AgentResponseUpdate", "UsageDetails"]


@register_state_type(type_id="checkflow.UsageDetails")
@dataclass(frozen=True, slots=True)
class UsageDetails:
    """The tokens a model spent on a reply, as its service reported them.

    Carried by an ``AgentResponse`` (and by the update of a stream that reports it) so that a
    protocol showing token counts (the Responses ``usage``) shows the agent's own; two of
    them add up (``a + b``) when a turn made several calls.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: UsageDetails) -> UsageDetails:
        return UsageDetails(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.reasoning_tokens + other.reasoning_tokens)


def _total_usage(usages: Iterable[UsageDetails | None]) -> UsageDetails | None:
    """The sum of the reported usages; ``None`` when none was reported."""
    reported = [usage for usage in usages if usage is not None]
    if not reported:
        return None
    total = reported[0]
    for usage in reported[1:]:
        total = total + usage
    return total


@register_state_type(type_id="checkflow.AgentResponseUpdate")
@dataclass(frozen=True, slots=True)
class AgentResponseUpdate:
    """One piece of a streamed response: usually a text delta, or whole function calls.

    ``usage`` is set on the piece (often the last, without contents) that reports the
    tokens the reply spent.
    """

    contents: tuple[Content, ...] = ()
    role: Role = "assistant"
    author_name: str | None = None
    usage: UsageDetails | None = None

    @property
    def text(self) -> str:
        """The text in this piece."""
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))


@register_state_type(type_id="checkflow.AgentResponse")
@dataclass(frozen=True, slots=True)
class AgentResponse:
    """The messages one run produced (usually one assistant message).

    ``text`` joins their text; ``user_input_requests`` and ``function_calls`` list what the
    agent needs from its caller before it can continue. ``usage`` is the tokens the run
    spent, when the agent's service reported them (``None`` otherwise).
    """

    messages: list[ChatMessage] = field(default_factory=list)
    author_name: str | None = None
    usage: UsageDetails | None = None

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

        A new message starts whenever the role changes; the updates' usages add up.
        """
        messages: list[ChatMessage] = []
        role: Role | None = None
        contents: list[Content] = []
        author: str | None = None
        usages: list[UsageDetails | None] = []
        for update in updates:
            usages.append(update.usage)
            if update.usage is not None and not update.contents:
                continue  # a usage report only
            author = author or update.author_name
            if role is not None and update.role != role:
                messages.append(ChatMessage(role, _merge_text(contents)))
                contents = []
            role = update.role
            contents.extend(update.contents)
        if role is not None:
            messages.append(ChatMessage(role, _merge_text(contents)))
        return cls(messages=messages, author_name=author, usage=_total_usage(usages))

    def to_updates(self) -> list[AgentResponseUpdate]:
        """The response as a stream, one update per message (for agents that do not stream),
        then its usage (when reported) on an update of its own."""
        updates = [AgentResponseUpdate(m.contents, m.role, self.author_name)
                   for m in self.messages]
        if self.usage is not None:
            updates.append(AgentResponseUpdate((), "assistant", self.author_name, self.usage))
        return updates


def _merge_text(contents: Sequence[Content]) -> list[Content]:
    merged: list[Content] = []
    for item in contents:
        if isinstance(item, TextContent) and merged and isinstance(merged[-1], TextContent):
            merged[-1] = TextContent(merged[-1].text + item.text)
        else:
            merged.append(item)
    return merged
