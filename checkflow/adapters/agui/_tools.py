"""Tool calls over AG-UI: the calls and results a run shows, and the client's own tools.

A model's tool call is shown as ``TOOL_CALL_START/ARGS/END`` and becomes an assistant message
of its own whose id is the call id (``parentMessageId`` says so, and it is what
``@ag-ui/client`` names a call without a parent), so the same message is rendered whether the
call was streamed live, replayed, or read back from a pending request of the checkpoint; a
result is ``TOOL_CALL_RESULT``, a tool message ``result-{callId}``. A request that pauses for
a tool call (``checkflow.agents.tool_request``: an approval, or a client's tool) is described
by ``tool_view``, from which the interrupt (reason ``tool_call``) and the call are rendered.
``client_tools`` turns ``RunAgentInput.tools`` into the ``ClientTool``s the agent is offered.
This module must never do I/O, touch a host or run a tool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec
from ag_ui.core import (
    BaseEvent,
    Tool,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from checkflow.agents import (
    ClientTool,
    FunctionCallContent,
    FunctionResultContent,
    ToolApprovalRequest,
    tool_request,
)
from checkflow.hosting import jsonable, pending_view
from checkflow.workflows import PendingRequest

__all__ = ["TOOL_CALL_REASON", "ToolCalls", "client_tools", "request_views", "result_id",
           "result_message", "result_text", "tool_interrupt", "tool_view"]

TOOL_CALL_REASON = "tool_call"
"""The AG-UI core interrupt reason of a pause bound to a tool call (``toolCallId`` set)."""

APPROVAL = "approval"
CLIENT = "client"

_encode = msgspec.json.Encoder().encode
_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


def result_id(call_id: str) -> str:
    """The id of the tool message holding ``call_id``'s result."""
    return f"result-{call_id}"


def result_text(value: Any, to_json: Callable[[Any], Any] = jsonable) -> str:
    """A tool result as a tool message's text: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else _encode(to_json(value)).decode()


def result_message(call_id: str, content: str) -> dict[str, Any]:
    """The AG-UI tool message of a result (as ``TOOL_CALL_RESULT`` mints it)."""
    return {"id": result_id(call_id), "role": "tool", "toolCallId": call_id,
            "content": content}


def _call_message(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "role": "assistant", "toolCalls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}


def tool_view(data: Any, to_json: Callable[[Any], Any] = jsonable) -> dict[str, Any] | None:
    """The tool call a pending request's data pauses for, as JSON (``None`` when it is not
    one): ``kind`` (``approval`` or ``client``), ``name``, ``callId``, ``arguments`` and, for
    an approval, the tool's ``description``."""
    asked = tool_request(data)
    if asked is None:
        return None
    view: dict[str, Any] = {
        "kind": APPROVAL if isinstance(asked, ToolApprovalRequest) else CLIENT,
        "name": asked.tool_name, "callId": asked.call_id,
        "arguments": to_json(dict(asked.arguments))}
    if isinstance(asked, ToolApprovalRequest) and asked.description:
        view["description"] = asked.description
    return view


def request_views(pending: Iterable[PendingRequest]) -> list[dict[str, Any]]:
    """Pending requests as the hosting toolkit shows them, each with its ``tool`` view."""
    return [{**pending_view(p), "tool": tool_view(p.data)} for p in pending]


def tool_interrupt(tool: Mapping[str, Any]) -> tuple[str, str]:
    """The interrupt's ``toolCallId`` and ``message`` for a tool view."""
    call = f"{tool['name']}({_encode(tool.get('arguments', {})).decode()})"
    if tool.get("kind") == APPROVAL:
        about = f" {tool['description']}" if tool.get("description") else ""
        return str(tool["callId"]), f"Approve {call}?{about}"
    return str(tool["callId"]), (f"Run your tool {call} and answer with a tool message for "
                                 f"call {tool['callId']}.")


def client_tools(tools: Sequence[Tool] | None) -> list[ClientTool]:
    """``RunAgentInput.tools`` as ``ClientTool``s (a schema that is not an object stands for
    no parameters)."""
    return [ClientTool(name=t.name, description=t.description or "",
                       parameters=dict(t.parameters) if isinstance(t.parameters, Mapping)
                       else dict(_NO_PARAMETERS))
            for t in tools or ()]


class ToolCalls:
    """The tool calls and results one stream shows: each call once, each result once, and
    none of the results the client sent itself (``answered``: its tool messages hold them).

    ``messages`` is where the AG-UI messages they make are appended (a translator's list).
    """

    def __init__(self, messages: list[dict[str, Any]],
                 to_json: Callable[[Any], Any] = jsonable) -> None:
        self.messages = messages
        self._to_json = to_json
        self._calls: set[str] = set()
        self._results: set[str] = set()

    def answered(self, call_ids: Iterable[str]) -> None:
        """Results the client holds already: they are not shown again."""
        self._results.update(call_ids)

    def call(self, call_id: str, name: str, arguments: Any) -> list[BaseEvent]:
        """``TOOL_CALL_START/ARGS/END`` for a call this stream has not shown yet."""
        if call_id in self._calls:
            return []
        self._calls.add(call_id)
        text = arguments if isinstance(arguments, str) else _encode(
            self._to_json(arguments)).decode()
        self.messages.append(_call_message(call_id, name, text))
        return [ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name,
                                   parent_message_id=call_id),
                ToolCallArgsEvent(tool_call_id=call_id, delta=text),
                ToolCallEndEvent(tool_call_id=call_id)]

    def contents(self, contents: Iterable[Any], *, results: bool) -> list[BaseEvent]:
        """The events of a message's or an update's contents: its calls, and (``results``:
        a ``tool`` message) its results."""
        out: list[BaseEvent] = []
        for item in contents:
            if isinstance(item, FunctionCallContent):
                out.extend(self.call(item.call_id, item.name, item.arguments))
            elif results and isinstance(item, FunctionResultContent):
                out.extend(self._result(item.call_id, item.result))
        return out

    def pending(self, views: Iterable[Mapping[str, Any]]) -> list[BaseEvent]:
        """The calls pending requests pause for, that this stream has not shown yet."""
        out: list[BaseEvent] = []
        for view in views:
            tool = view.get("tool")
            if isinstance(tool, Mapping):
                out.extend(self.call(str(tool["callId"]), str(tool["name"]),
                                     tool.get("arguments", {})))
        return out

    def _result(self, call_id: str, value: Any) -> list[BaseEvent]:
        if call_id in self._results:
            return []
        self._results.add(call_id)
        content = result_text(value, self._to_json)
        self.messages.append(result_message(call_id, content))
        return [ToolCallResultEvent(message_id=result_id(call_id), tool_call_id=call_id,
                                    content=content, role="tool")]
