"""The ``POST /responses`` body: msgspec shapes, and the rules that cross fields.

``CreateResponseBody`` is decoded once from the request; ``parse_request`` turns it into a
``CreateRequest`` the routes act on, or raises ``ResponsesError`` naming the offending field.
Input items are decoded one by one so an error names its place (``input[2].content``).
Fields of the Responses API that a workflow has no use for (``tools``, ``temperature``, ...)
are accepted and ignored. This module must never call the host or touch storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import msgspec

from checkflow.adapters.foundry._errors import ResponsesError, param_from_validation

__all__ = [
    "BRANCH_KEY",
    "CallReply",
    "CreateRequest",
    "CreateResponseBody",
    "InputMessage",
    "parse_request",
]

_MAX_METADATA = 16
BRANCH_KEY = "checkflow.branch"
"""The ``metadata`` key (value ``"true"``) by which a client asks to branch from an earlier
response instead of continuing its conversation's latest one."""


class ConversationRef(msgspec.Struct):
    """``conversation: {"id": ...}``, the object form of the conversation parameter."""

    id: str


class StreamOptions(msgspec.Struct):
    include_obfuscation: bool | None = None


_Name = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class AgentReference(msgspec.Struct, kw_only=True):
    """``agent_reference``: the Foundry agent a request is for (the platform sends it)."""

    name: _Name
    type: Literal["agent_reference"] = "agent_reference"
    version: _Name | None = None

    def wire(self) -> dict[str, Any]:
        """As a response shows it: ``version`` only when given."""
        shown: dict[str, Any] = {"type": self.type, "name": self.name}
        if self.version is not None:
            shown["version"] = self.version
        return shown


class CreateResponseBody(msgspec.Struct, kw_only=True):
    """The fields of a create-response request this adapter reads (others are ignored)."""

    model: str | None = None
    input: str | list[dict[str, Any]] | None = None
    conversation: str | ConversationRef | None = None
    previous_response_id: str | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    store: bool | None = None
    background: bool | None = None
    instructions: str | None = None
    metadata: dict[str, str] | None = None
    agent_reference: AgentReference | None = None
    agent_session_id: Annotated[str, msgspec.Meta(min_length=1, max_length=128)] | None = None


class _Text(msgspec.Struct, tag_field="type", tag="input_text"):
    text: str


class _OutputText(msgspec.Struct, tag_field="type", tag="output_text"):
    text: str
    annotations: list[Any] = []


_Part = _Text | _OutputText


class _Message(msgspec.Struct, kw_only=True):
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[_Part]
    type: Literal["message"] = "message"
    id: str | None = None
    status: str | None = None


_CallId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class _CallOutput(msgspec.Struct, kw_only=True):
    type: Literal["function_call_output"]
    call_id: _CallId
    output: str | list[_Part]
    id: str | None = None
    status: str | None = None


class _ApprovalResponse(msgspec.Struct, kw_only=True):
    type: Literal["mcp_approval_response"]
    approval_request_id: _CallId
    approve: bool
    reason: str | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class InputMessage:
    """One message of the input: its role and its text (content parts joined)."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class CallReply:
    """An answer to a ``request_info`` call: the call id and the value as sent.

    ``output`` is the string the client sent (for ``function_call_output``) and ``value`` the
    JSON it parses to, or the string itself when it is not JSON; an ``mcp_approval_response``
    gives its boolean as both.
    """

    call_id: str
    output: Any
    value: Any


@dataclass(frozen=True, slots=True)
class CreateRequest:
    """A create request that passed every check that needs no stored state."""

    model: str | None
    messages: list[InputMessage]
    replies: list[CallReply]
    items: list[dict[str, Any]]
    conversation: str | None
    previous_response_id: str | None
    stream: bool
    store: bool
    background: bool
    instructions: str | None
    metadata: dict[str, str] = field(default_factory=dict)
    branch: bool = False
    agent_reference: dict[str, Any] | None = None
    agent_session_id: str | None = None


def _invalid(message: str, param: str | None, code: str = "invalid_value") -> ResponsesError:
    return ResponsesError(400, message, param=param, code=code)


def _convert(value: Any, tp: type[Any], where: str) -> Any:
    try:
        return msgspec.convert(value, tp, strict=True)
    except msgspec.ValidationError as exc:
        inner = param_from_validation(str(exc)) or ""
        param = where + ("" if not inner or inner.startswith("[") else ".") + inner
        raise _invalid(f"{where}: {exc}", param) from None


def _joined(content: str | list[_Part]) -> str:
    return content if isinstance(content, str) else "".join(part.text for part in content)


def _decode_reply(output: str) -> Any:
    try:
        return msgspec.json.decode(output)
    except msgspec.DecodeError:
        return output


def _message_item(message: _Message) -> dict[str, Any]:
    kind = "output_text" if message.role == "assistant" else "input_text"
    return {"type": "message", "role": message.role, "status": "completed",
            "content": [{"type": kind, "text": _joined(message.content)}]}


def _items(raw: str | list[dict[str, Any]] | None) -> tuple[
    list[InputMessage], list[CallReply], list[dict[str, Any]]
]:
    """Messages, replies and the stored form of each input item (ids are given later)."""
    if raw is None:
        return [], [], []
    if isinstance(raw, str):
        item = {"type": "message", "role": "user", "status": "completed",
                "content": [{"type": "input_text", "text": raw}]}
        return [InputMessage("user", raw)], [], [item]
    messages: list[InputMessage] = []
    replies: list[CallReply] = []
    items: list[dict[str, Any]] = []
    for index, item in enumerate(raw):
        where = f"input[{index}]"
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            message = _convert(item, _Message, where)
            messages.append(InputMessage(message.role, _joined(message.content)))
            items.append(_message_item(message))
        elif kind == "function_call_output":
            call = _convert(item, _CallOutput, where)
            text = _joined(call.output)
            replies.append(CallReply(call.call_id, text, _decode_reply(text)))
            items.append({"type": "function_call_output", "call_id": call.call_id,
                          "output": text, "status": "completed"})
        elif kind == "mcp_approval_response":
            approval = _convert(item, _ApprovalResponse, where)
            replies.append(CallReply(approval.approval_request_id, approval.approve,
                                     approval.approve))
            items.append({"type": "mcp_approval_response", "approve": approval.approve,
                          "approval_request_id": approval.approval_request_id,
                          "reason": approval.reason})
        else:
            raise _invalid(
                f"{where}: items of type {kind!r} are not accepted; send messages, "
                "function_call_output or mcp_approval_response items", f"{where}.type")
    return messages, replies, items


def _check_metadata(metadata: dict[str, str]) -> None:
    if len(metadata) > _MAX_METADATA:
        raise _invalid(f"metadata has {len(metadata)} keys; at most {_MAX_METADATA} are allowed",
                       "metadata")
    for key, value in metadata.items():
        if len(key) > 64 or len(value) > 512:
            raise _invalid(f"metadata[{key!r}]: keys are at most 64 characters and values at "
                           "most 512", f"metadata.{key}")


def _branch(metadata: dict[str, str], previous_response_id: str | None) -> bool:
    value = metadata.get(BRANCH_KEY)
    if value is None:
        return False
    if value not in ("true", "false"):
        raise _invalid(f"metadata[{BRANCH_KEY!r}] must be 'true' or 'false', not {value!r}",
                       f"metadata.{BRANCH_KEY}")
    if value == "true" and previous_response_id is None:
        raise _invalid(f"metadata[{BRANCH_KEY!r}] branches from a previous response: send "
                       "previous_response_id", "previous_response_id",
                       "missing_required_parameter")
    return value == "true"


def _check_replies(request: CreateRequest) -> None:
    calls = [reply.call_id for reply in request.replies]
    if not calls:
        return
    named = ", ".join(sorted(set(calls)))
    repeated = sorted({call for call in calls if calls.count(call) > 1})
    if repeated:
        raise _invalid(f"call ids answered more than once: {', '.join(repeated)}", "input")
    if request.messages:
        raise _invalid(f"replies to calls {named} cannot be mixed with new messages; send the "
                       "replies first, then the message with the new response's id", "input")
    if request.previous_response_id is None and request.conversation is None:
        raise _invalid(f"replies to calls {named} need the previous_response_id of the "
                       "response that asked for them (or its conversation)",
                       "previous_response_id", "missing_required_parameter")


def parse_request(body: CreateResponseBody) -> CreateRequest:
    """The request, checked: ``ResponsesError`` (400, naming the field) when it is refused."""
    if body.stream_options is not None and not body.stream:
        raise _invalid("stream_options is only allowed when stream is true", "stream_options")
    store = body.store is not False
    if body.background and not store:
        raise _invalid("background responses must be stored: drop store=false", "background")
    conversation = (body.conversation.id if isinstance(body.conversation, ConversationRef)
                    else body.conversation)
    if conversation is not None and body.previous_response_id is not None:
        raise _invalid("previous_response_id and conversation cannot be used together: a "
                       "response already belongs to its conversation", "previous_response_id",
                       "mutually_exclusive_parameters")
    metadata = body.metadata or {}
    _check_metadata(metadata)
    messages, replies, items = _items(body.input)
    if not messages and not replies:
        raise _invalid("input is required: a string, messages or function_call_output items",
                       "input", "missing_required_parameter")
    request = CreateRequest(
        model=body.model, messages=messages, replies=replies, items=items,
        conversation=conversation, previous_response_id=body.previous_response_id,
        stream=bool(body.stream), store=store, background=bool(body.background),
        instructions=body.instructions, metadata=metadata,
        branch=_branch(metadata, body.previous_response_id),
        agent_reference=None if body.agent_reference is None else body.agent_reference.wire(),
        agent_session_id=body.agent_session_id,
    )
    _check_replies(request)
    return request
