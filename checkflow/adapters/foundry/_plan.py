"""Where a new response runs: its conversation, what it continues, its input and its key.

``plan_response`` resolves a checked ``CreateRequest``: ``previous_response_id`` names a turn
(its conversation is in the id) to continue, or to branch from when the client asks for it
(``metadata["checkflow.branch"] = "true"``); ``conversation`` (or the container's session
hint) names a conversation to advance at its head; an ``Idempotency-Key`` alone names a
conversation derived from the key; nothing starts a new one. The client's function tools go
to a workflow's shared state (``CLIENT_TOOLS_KEY``) with the turn's input, on every turn
(an empty list when it declared none). Every refusal that needs stored state is raised here,
before the host runs anything, so none creates a session or a checkpoint. This module must
never start a run.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from checkflow.adapters.foundry._errors import ResponsesError
from checkflow.adapters.foundry._ids import parse_response_id
from checkflow.adapters.foundry._objects import new_id
from checkflow.adapters.foundry._origin import (
    ResponseOrigin,
    idempotency_key,
    keyed_conversation,
)
from checkflow.adapters.foundry._wire import BRANCH_KEY, CallReply, CreateRequest, InputMessage
from checkflow.agents import CLIENT_TOOLS_KEY, ChatMessage
from checkflow.hosting import HostDescription, ResumeToken, TurnRecord

__all__ = ["Plan", "Previous", "check_replies", "not_latest", "plan_response"]

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}

Previous = Callable[[str], Awaitable[tuple[str, TurnRecord, ResponseOrigin] | None]]
"""Looks a stored response up: ``(conversation_id, its turn, its origin)`` or ``None``."""


@dataclass(slots=True)
class Plan:
    """A response about to run: the arguments of ``host.run`` and what its turn records."""

    conversation_id: str
    origin: ResponseOrigin
    principal: str | None
    message: Any = None
    replies: dict[str, CallReply] = field(default_factory=dict)
    from_snapshot: str | None = None
    idempotency_key: str | None = None
    keyed_by_header: bool = False
    previous: TurnRecord | None = None
    resume_token: ResumeToken | None = None
    shared_state: dict[str, Any] | None = None

    @property
    def responses(self) -> dict[str, Any] | None:
        """Each reply's first reading by request id (``None`` when this turn sends a
        message)."""
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


def _not_found(response_id: str) -> ResponsesError:
    return ResponsesError(400, f"previous response {response_id!r} not found",
                          param="previous_response_id", code="previous_response_not_found")


async def _previous(find: Previous, response_id: str) -> tuple[str, TurnRecord]:
    found = await find(response_id)
    if found is None:
        raise _not_found(response_id)
    conversation_id, record, _ = found
    if record.state == "running":
        raise ResponsesError(400, f"previous response {response_id!r} is still in_progress; "
                             "wait for it or cancel it", param="previous_response_id",
                             code="previous_response_in_progress")
    return conversation_id, record


def not_latest(previous_id: str | None, conversation_id: str) -> ResponsesError:
    """409: a message after a response its conversation has moved on from."""
    return ResponsesError(
        409, f"response {previous_id!r} is no longer the latest of conversation "
        f"{conversation_id!r}: continue from its latest response, or branch from this one "
        f"(metadata {{{BRANCH_KEY!r}: 'true'}})", param="previous_response_id",
        code="previous_response_not_latest", headers={"x-should-retry": "false"})


def _token(record: TurnRecord) -> ResumeToken | None:
    if record.checkpoint_id is None or record.last_snapshot_id is None:
        return None
    return ResumeToken(record.checkpoint_id, record.last_snapshot_id)


def check_replies(replies: list[CallReply], previous_id: str, previous: TurnRecord) -> None:
    """Refuse replies to calls the previous response did not leave pending (400)."""
    pending = list(previous.pending_requests) if previous.state == "committed" else []
    _not_pending(replies, pending, f"response {previous_id}")


async def plan_response(
    request: CreateRequest,
    *,
    description: HostDescription,
    principal: str | None,
    find_previous: Previous,
    latest_turn: Callable[[str], Awaitable[TurnRecord | None]],
    is_deleted: Callable[[str], Awaitable[bool]],
    session_hint: str | None = None,
    key_header: str | None = None,
    agent_reference: dict[str, Any] | None = None,
    container: bool = False,
) -> Plan:
    """The plan for ``request``; ``ResponsesError`` for a refusal that needs stored state.

    Replies continuing a response read nothing here (``is_deleted`` aside): the engine
    refuses a call no longer pending at the head, and only then is the previous response
    read, to say why. A message continuing a response runs only if that response is its
    conversation's latest turn (``latest_turn``: the host then runs on the checkpoint it
    read, and the resume token makes the host check it again under the lease); a branch
    starts from the snapshot the previous response ended at. ``agent_reference`` is the
    response's when the request names none (the container's agent). In a ``container`` the
    response records the session it answered in: ``session_hint`` (the container session,
    which selects the conversation when the request names none), else its conversation.
    """
    if request.client_tools and not description.checkpoints:
        raise ResponsesError(400, "an agent served on its own takes no client tools (they reach "
                             "an agent through a workflow's shared state): serve it in a "
                             "workflow (AgentExecutor), or drop the function tools",
                             param="tools", code="invalid_value")
    agent = request.agent_reference or agent_reference
    who = _Where(agent, session_hint, container)
    previous = None
    from_snapshot = None
    token = None
    if request.previous_response_id is not None:
        parsed = parse_response_id(request.previous_response_id)
        if parsed is None or await is_deleted(request.previous_response_id):
            raise _not_found(request.previous_response_id)
        conversation_id = parsed[0]
        if request.replies and not request.branch:
            return _plan(request, description, principal, conversation_id, key_header, who)
        if not request.branch:
            latest = await latest_turn(conversation_id)
            if latest is not None and latest.turn_id == parsed[1]:
                return _plan(request, description, principal, conversation_id, key_header,
                             who, previous=latest, resume_token=_token(latest))
        conversation_id, previous = await _previous(find_previous, request.previous_response_id)
        check_replies(request.replies, request.previous_response_id, previous)
        if request.branch and not description.checkpoints:
            raise ResponsesError(400, f"an agent keeps no snapshots: there is nothing to branch "
                                 f"from (drop metadata[{BRANCH_KEY!r}])",
                                 param=f"metadata.{BRANCH_KEY}", code="invalid_value")
        if request.branch:
            from_snapshot = previous.last_snapshot_id
        elif previous.state == "committed":
            raise not_latest(request.previous_response_id, conversation_id)
        # else a failed or cancelled response: nothing of it is on the line; continue the head
    else:
        conversation_id = (request.conversation or session_hint
                           or (keyed_conversation(principal, key_header) if key_header else None)
                           or new_id("conv"))
    return _plan(request, description, principal, conversation_id, key_header, who,
                 from_snapshot=from_snapshot, previous=previous, resume_token=token)


@dataclass(frozen=True, slots=True)
class _Where:
    """Who a response is for: its agent, and (in a container) the session it came in."""

    agent: dict[str, Any] | None
    session: str | None
    container: bool


def _plan(request: CreateRequest, description: HostDescription, principal: str | None,
          conversation_id: str, key_header: str | None, who: _Where,
          **where: Any) -> Plan:
    origin = ResponseOrigin(
        created_at=int(time.time()), model=request.model or description.name,
        previous_response_id=request.previous_response_id, instructions=request.instructions,
        metadata=request.metadata, store=request.store, background=request.background,
        input=request.items, agent_reference=who.agent,
        agent_session_id=(who.session or conversation_id) if who.container else None)
    tools = {CLIENT_TOOLS_KEY: request.client_tools} if description.checkpoints else None
    return Plan(conversation_id=conversation_id, origin=origin, principal=principal,
                message=_message(request, description),
                replies={reply.call_id: reply for reply in request.replies},
                idempotency_key=idempotency_key(request, key_header),
                keyed_by_header=bool(key_header), shared_state=tools, **where)


