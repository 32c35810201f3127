"""What an AG-UI ``RunAgentInput`` asks of the host: new messages, resume answers, options.

Pure functions over ``ag_ui.core`` models: the de-duplication of resent history (by message
id, against the ids on the thread's lineage), the conversion of the new messages to the
workflow ``message``, the tool messages that answer open client-tool interrupts, the
validation of ``resume[]`` against the thread's open interrupts, and the
``forwardedProps.checkflow`` options. This module must never do I/O or touch a host.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    DeveloperMessage,
    Message,
    ResumeEntry,
    SystemMessage,
    ToolMessage,
    UserMessage,
)

from checkflow.adapters.agui._tools import CLIENT, result_message, result_text
from checkflow.agents import ChatMessage, Content, FunctionCallContent, FunctionResultContent
from checkflow.workflows import RequestCancelled

__all__ = [
    "CheckflowOptions",
    "ResumeViolation",
    "ToolAnswers",
    "chat_messages",
    "latest_user_text",
    "new_messages",
    "options_from",
    "resume_responses",
    "resumed_results",
    "tool_answers",
    "wire_message",
]


class ResumeViolation(Exception):
    """A run whose ``resume[]`` breaks the AG-UI 1.0 resume contract (reported as RUN_ERROR)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def new_messages(messages: Sequence[Message], seen: Collection[str]) -> list[Message]:
    """The messages after the last one the thread has seen whose ids it has not seen, in
    order; a repeated id counts once.

    Clients resend the whole history with the new messages at its end, so only what follows
    the last seen message is new: history older than what the thread still knows of (an
    agent host keeps its latest turns only) is never fed again.
    """
    start = 0
    for index, message in enumerate(messages):
        if message.id in seen:
            start = index + 1
    fresh: list[Message] = []
    ids: set[str] = set()
    for message in messages[start:]:
        if message.id in seen or message.id in ids:
            continue
        ids.add(message.id)
        fresh.append(message)
    return fresh


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(getattr(part, "text", "")) for part in content
                       if getattr(part, "type", None) == "text")
    return ""


def latest_user_text(messages: Sequence[Message]) -> str | None:
    """The text of the last user message, or ``None`` when there is no user message."""
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            return _text(message.content)
    return None


def chat_messages(messages: Sequence[Message]) -> list[ChatMessage]:
    """The messages as ``ChatMessage``s; roles checkflow has no counterpart for are skipped.

    ``developer`` becomes ``system``; an assistant's ``toolCalls`` become
    ``FunctionCallContent``s (arguments that are not a JSON object become ``{}``); a tool
    message becomes a ``tool`` message holding a ``FunctionResultContent`` for its
    ``toolCallId``; activity and reasoning are dropped.
    """
    result: list[ChatMessage] = []
    for message in messages:
        if isinstance(message, UserMessage):
            result.append(ChatMessage("user", _text(message.content)))
        elif isinstance(message, SystemMessage | DeveloperMessage):
            result.append(ChatMessage("system", message.content))
        elif isinstance(message, AssistantMessage):
            contents: list[Content] = []
            if message.content or not message.tool_calls:
                contents.extend(ChatMessage("assistant", message.content or "").contents)
            contents.extend(FunctionCallContent(c.id, c.function.name,
                                                _arguments(c.function.arguments))
                            for c in message.tool_calls or ())
            result.append(ChatMessage("assistant", contents))
        elif isinstance(message, ToolMessage):
            content = FunctionResultContent(message.tool_call_id, _text(message.content))
            result.append(ChatMessage("tool", content))
    return result


def _arguments(text: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text) if text else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


@dataclass(frozen=True, slots=True)
class ToolAnswers:
    """The new messages split: the tool messages that answer open client-tool interrupts
    (``answers``: call id -> the message's text), and the rest (``rest``: the input)."""

    answers: dict[str, str] = field(default_factory=dict)
    rest: list[Message] = field(default_factory=list)


def tool_answers(fresh: Sequence[Message], tools: Mapping[str, str], issued: Collection[str],
                 calls: Collection[str]) -> ToolAnswers:
    """Which new ``tool`` messages answer an open client-tool interrupt (``tools``: open
    request id -> ``approval``/``client``); the others stay input.

    Raises ``ResumeViolation``: ``duplicate_interrupt`` for two answers to one call,
    ``already_resolved`` for a call whose interrupt this thread issued and closed, and
    ``unknown_tool_call`` for a call neither the thread (``calls``) nor an assistant message
    among the new ones made.
    """
    made = set(calls) | {c.id for m in fresh if isinstance(m, AssistantMessage)
                         for c in m.tool_calls or ()}
    split = ToolAnswers()
    for message in fresh:
        if not isinstance(message, ToolMessage):
            split.rest.append(message)
            continue
        call_id = message.tool_call_id
        if tools.get(call_id) == CLIENT:
            if call_id in split.answers:
                raise ResumeViolation("duplicate_interrupt",
                                      f"two tool messages answer tool call {call_id!r}")
            split.answers[call_id] = _text(message.content)
        elif call_id in issued and call_id not in tools:
            raise ResumeViolation(
                "already_resolved",
                f"tool call {call_id!r} was already answered; tool message {message.id!r} "
                f"comes too late")
        elif call_id in made or call_id in tools:
            split.rest.append(message)
        else:
            raise ResumeViolation(
                "unknown_tool_call",
                f"tool message {message.id!r} answers tool call {call_id!r}, which this "
                f"thread never made")
    return split


def resumed_results(entries: Sequence[ResumeEntry] | None, tools: Mapping[str, str],
                    answered: Collection[str]) -> list[dict[str, Any]]:
    """The tool messages a ``resume[]`` that answers client tools stands for (recorded with
    the turn, so the transcript holds each result as if the client had sent it)."""
    return [result_message(e.interrupt_id, result_text(e.payload)) for e in entries or ()
            if tools.get(e.interrupt_id) == CLIENT and e.status == "resolved"
            and e.interrupt_id not in answered]


def wire_message(message: Message) -> dict[str, Any]:
    """A message as its AG-UI JSON object (camelCase, optional fields left out)."""
    dumped: dict[str, Any] = message.model_dump(mode="json", by_alias=True)
    return dumped


def resume_responses(
    entries: Sequence[ResumeEntry] | None,
    open_ids: Collection[str],
    issued_ids: Collection[str],
    *,
    has_input: bool,
    answered: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The host ``responses`` a run's ``resume[]`` (and the tool messages that answer client
    tools, ``answered``) give, or ``None`` for no resume.

    Raises ``ResumeViolation`` for each breach of the contract, checked in this order:
    an id given twice (``duplicate_interrupt``), an id that is not open (``already_resolved``
    when this thread once issued it, else ``unknown_interrupt``), an entry for a call a tool
    message answers that says otherwise (``conflicting_answer``: cancelled, or another
    payload), an open interrupt left uncovered (``resume_incomplete``), new input alongside a
    resume (``input_with_resume``), and new input with interrupts open but no resume
    (``resume_required``). ``status: "cancelled"`` answers with ``RequestCancelled()``.
    """
    answered = answered or {}
    if not entries and not answered:
        if open_ids and has_input:
            listed = ", ".join(sorted(open_ids))
            raise ResumeViolation(
                "resume_required",
                f"the thread has open interrupts ({listed}); the run must carry resume[]",
            )
        return None
    responses: dict[str, Any] = dict(answered)
    given: set[str] = set()
    for entry in entries or ():
        interrupt_id = entry.interrupt_id
        if interrupt_id in given:
            raise ResumeViolation(
                "duplicate_interrupt", f"resume[] answers interrupt {interrupt_id!r} twice"
            )
        if interrupt_id not in open_ids:
            if interrupt_id in issued_ids:
                raise ResumeViolation(
                    "already_resolved",
                    f"interrupt {interrupt_id!r} was already resolved; its handler ran once",
                )
            raise ResumeViolation(
                "unknown_interrupt", f"interrupt {interrupt_id!r} is not open on this thread"
            )
        given.add(interrupt_id)
        if interrupt_id in answered:
            payload = entry.payload
            if entry.status == "cancelled" or (payload is not None
                                               and payload != answered[interrupt_id]):
                raise ResumeViolation(
                    "conflicting_answer",
                    f"interrupt {interrupt_id!r} is answered by a tool message and by a "
                    f"resume entry that says otherwise; send one answer")
            continue
        responses[interrupt_id] = (
            RequestCancelled() if entry.status == "cancelled" else entry.payload
        )
    missing = sorted(set(open_ids) - set(responses))
    if missing:
        raise ResumeViolation(
            "resume_incomplete",
            f"resume[] leaves open interrupt(s) unanswered: {', '.join(missing)}",
        )
    if has_input:
        raise ResumeViolation(
            "input_with_resume", "a run that resumes interrupts cannot also bring new messages"
        )
    return responses


@dataclass(frozen=True, slots=True)
class CheckflowOptions:
    """``forwardedProps.checkflow``: branch from a snapshot, or pin the expected head."""

    from_snapshot: str | None = None
    resume_token: tuple[str, str] | None = None  # (checkpoint id, snapshot id)


def _field(mapping: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in mapping:
            return mapping[name]
    return None


def options_from(forwarded: Any) -> CheckflowOptions:
    """Read ``forwardedProps.checkflow`` (``fromSnapshot``, ``resumeToken``); ``ValueError`` names
    the field that has the wrong shape. Anything else in ``forwardedProps`` is ignored."""
    if not isinstance(forwarded, Mapping):
        return CheckflowOptions()
    props = forwarded.get("checkflow")
    if props is None:
        return CheckflowOptions()
    if not isinstance(props, Mapping):
        raise ValueError("forwardedProps.checkflow must be an object")
    snapshot = _field(props, "fromSnapshot", "from_snapshot")
    if snapshot is not None and not isinstance(snapshot, str):
        raise ValueError("forwardedProps.checkflow.fromSnapshot must be a string")
    raw = _field(props, "resumeToken", "resume_token")
    token: tuple[str, str] | None = None
    if raw is not None:
        if not isinstance(raw, Mapping):
            raise ValueError("forwardedProps.checkflow.resumeToken must be an object")
        checkpoint_id = _field(raw, "checkpointId", "checkpoint_id")
        snapshot_id = _field(raw, "snapshotId", "snapshot_id")
        if not isinstance(checkpoint_id, str) or not isinstance(snapshot_id, str):
            raise ValueError(
                "forwardedProps.checkflow.resumeToken needs string checkpointId and snapshotId"
            )
        token = (checkpoint_id, snapshot_id)
    return CheckflowOptions(from_snapshot=snapshot, resume_token=token)
