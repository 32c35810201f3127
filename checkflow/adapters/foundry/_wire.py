"""The ``POST /responses`` body: msgspec shapes, and the rules that cross fields.

``CreateResponseBody`` is decoded once from the request; ``parse_request`` turns it into a
``CreateRequest`` the routes act on, or raises ``ResponsesError`` naming the offending field.
Input items are decoded one by one so an error names its place (``input[2].content``); so
are the ``function`` tools of ``tools``, which become the turn's ``ClientTool``s (other tool
types, and fields a workflow has no use for such as ``temperature``, are accepted and
ignored). This module must never call the host or touch storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import msgspec

from checkflow.adapters.foundry._errors import ResponsesError, param_from_validation
from checkflow.agents import ClientTool

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
    tools: list[dict[str, Any]] | None = None


_ToolName = Annotated[str, msgspec.Meta(pattern=r"^[a-zA-Z0-9_-]{1,64}$")]


class _FunctionTool(msgspec.Struct, kw_only=True):
    """A ``function`` tool the client declares (and runs itself when the model calls it)."""

    type: Literal["function"]
    name: _ToolName
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


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
    """An answer to a pending call: the call id and the values it can be read as, in turn.

    A ``function_call_output`` is read as the JSON its output parses to, then as the text
    itself (one reading when it is not JSON); an ``mcp_approval_response`` as its
    ``approve`` boolean (a yes/no request), then as a tool approval ``{"approved",
    "reason"}``. The engine refuses a reading that does not fit the request, and the next
    is tried.
    """

    call_id: str
    readings: tuple[Any, ...]
    approval: bool = False  # an mcp_approval_response

    @property
    def value(self) -> Any:
        """The first reading: what the turn is tried with."""
        return self.readings[0]


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
    client_tools: list[ClientTool] = field(default_factory=list)


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


def _output_readings(output: str) -> tuple[Any, ...]:
    """JSON first, then the text as sent (the text alone when it is not JSON)."""
    try:
        return msgspec.json.decode(output), output
    except msgspec.DecodeError:
        return (output,)


def _approval_readings(approve: bool, reason: str | None) -> tuple[Any, ...]:
    """The yes/no first, then the ``ToolApproval`` of a tool call waiting to run."""
    answer: dict[str, Any] = {"approved": approve}
    if reason is not None:
        answer["reason"] = reason
    return approve, answer


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
            replies.append(CallReply(call.call_id, _output_readings(text)))
            items.append({"type": "function_call_output", "call_id": call.call_id,
                          "output": text, "status": "completed"})
        elif kind == "mcp_approval_response":
            approval = _convert(item, _ApprovalResponse, where)
            replies.append(CallReply(approval.approval_request_id,
                                     _approval_readings(approval.approve, approval.reason),
                                     approval=True))
            items.append({"type": "mcp_approval_response", "approve": approval.approve,
                          "approval_request_id": approval.approval_request_id,
                          "reason": approval.reason})
        else:
            raise _invalid(
                f"{where}: items of type {kind!r} are not accepted; send messages, "
                "function_call_output or mcp_approval_response items", f"{where}.type")
    return messages, replies, items


def _client_tools(raw: list[dict[str, Any]] | None) -> list[ClientTool]:
    """The ``function`` tools of ``tools`` as ``ClientTool``s (other types are ignored);
    a malformed one, or a name declared twice, is a 400 naming its place."""
    found: list[ClientTool] = []
    for index, item in enumerate(raw or ()):
        where = f"tools[{index}]"
        if item.get("type") != "function":
            if not isinstance(item.get("type"), str):
                raise _invalid(f"{where}: a tool needs a type", f"{where}.type",
                               "missing_required_parameter")
            continue
        tool = _convert(item, _FunctionTool, where)
        if any(known.name == tool.name for known in found):
            raise _invalid(f"{where}: function {tool.name!r} is declared twice",
                           f"{where}.name")
        found.append(ClientTool(name=tool.name, description=tool.description or "",
                                **({} if tool.parameters is None
                                   else {"parameters": tool.parameters})))
    return found


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
        client_tools=_client_tools(body.tools),
    )
    _check_replies(request)
    return request
