"""Where a new response runs: its conversation, the snapshot it starts from, its input.

``plan_response`` resolves a checked ``CreateRequest`` against the stored responses:
``previous_response_id`` names the conversation and the snapshot to continue from (a branch
when it is not the head), ``conversation`` (or the container's session hint) names a
conversation to advance, and neither starts a new one. Every refusal is raised here, before
the host is asked to run, so none of them creates a session or a checkpoint. This module
must never start a run.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from checkflow.adapters.foundry._errors import ResponsesError
from checkflow.adapters.foundry._objects import item_id, new_id
from checkflow.adapters.foundry._records import ResponseRecord, ResponseStore
from checkflow.adapters.foundry._wire import CallReply, CreateRequest, InputMessage
from checkflow.agents import ChatMessage
from checkflow.hosting import HostDescription

__all__ = ["Plan", "plan_response"]

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


@dataclass(slots=True)
class Plan:
    """A response about to run: its draft record and the arguments of ``host.run``."""

    record: ResponseRecord
    message: Any = None
    replies: dict[str, CallReply] = field(default_factory=dict)
    from_snapshot: str | None = None

    @property
    def responses(self) -> dict[str, Any] | None:
        """The JSON-parsed replies by request id (``None`` when this turn sends a message)."""
        if not self.replies:
            return None
        return {call_id: reply.value for call_id, reply in self.replies.items()}


def _chat(messages: list[InputMessage], instructions: str | None) -> list[ChatMessage]:
    chat = [ChatMessage("system", instructions)] if instructions else []
    return chat + [ChatMessage(_ROLES[m.role], m.text) for m in messages]  # type: ignore[arg-type]


def _message(request: CreateRequest, description: HostDescription) -> Any:
    """What ``host.run`` gets as ``message``: chat messages for a chat workflow or agent, the
    text of a lone user message otherwise (the host converts it to the start's input type)."""
    if request.replies:
        return None
    if description.chat_input:
        return _chat(request.messages, request.instructions)
    if len(request.messages) == 1 and request.messages[0].role == "user":
        return request.messages[0].text
    return _chat(request.messages, None)


def _not_pending(replies: list[CallReply], pending: list[str], where: str) -> None:
    unknown = [reply.call_id for reply in replies if reply.call_id not in pending]
    if unknown:
        listed = ", ".join(pending) or "none"
        raise ResponsesError(
            400, f"no pending call {', '.join(unknown)} in {where} (pending there: {listed})",
            param="input", code="invalid_function_call_output")


async def _previous(
    store: ResponseStore, response_id: str, principal: str | None
) -> ResponseRecord:
    loaded = await store.load(response_id, principal=principal)
    if loaded is None:
        raise ResponsesError(400, f"previous response {response_id!r} not found",
                             param="previous_response_id", code="previous_response_not_found")
    previous = loaded[0]
    if not previous.finished:
        raise ResponsesError(400, f"previous response {response_id!r} is still "
                             f"{previous.status}; wait for it or cancel it",
                             param="previous_response_id", code="previous_response_in_progress")
    return previous


async def plan_response(
    request: CreateRequest,
    *,
    store: ResponseStore,
    description: HostDescription,
    principal: str | None,
    pending_at_head: Callable[[str], Awaitable[list[str]]],
    session_hint: str | None = None,
) -> Plan:
    """The plan for ``request``; ``ResponsesError`` for a refusal that needs stored state.

    ``pending_at_head(conversation_id)`` gives the call ids pending at a conversation's head
    (for replies sent with ``conversation``).
    """
    response_id = new_id("resp")
    previous = None
    from_snapshot = None
    if request.previous_response_id is not None:
        previous = await _previous(store, request.previous_response_id, principal)
        conversation_id = previous.conversation_id
        _not_pending(request.replies, previous.pending_calls,
                     f"response {request.previous_response_id}")
        if description.checkpoints:
            from_snapshot = previous.snapshot_id
    else:
        conversation_id = request.conversation or session_hint or new_id("conv")
        if request.replies:
            pending = await pending_at_head(conversation_id)
            _not_pending(request.replies, pending, f"conversation {conversation_id}")
    items = [{**item, "id": item_id(response_id, index, "item")}
             for index, item in enumerate(request.items)]
    record = ResponseRecord(
        id=response_id, conversation_id=conversation_id, principal=principal,
        status="in_progress", created_at=int(time.time()),
        model=request.model or description.name,
        previous_response_id=request.previous_response_id,
        snapshot_id=None if previous is None else previous.snapshot_id,
        checkpoint_id=None if previous is None else previous.checkpoint_id,
        instructions=request.instructions, metadata=request.metadata, store=request.store,
        background=request.background, input_items=items,
    )
    return Plan(record=record, message=_message(request, description),
                replies={reply.call_id: reply for reply in request.replies},
                from_snapshot=from_snapshot)
