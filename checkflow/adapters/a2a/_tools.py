"""A tool call a paused task waits for, as A2A shows it.

``AgentExecutor`` pauses a tool agent with an ordinary request whose id is the model's call id
(``checkflow.agents.tool_request`` reads it): a ``ToolApprovalRequest`` (a person approves the
call first) or a ``ClientToolCall`` (the client runs its own tool). A2A has no tool messages,
so such a request is shown like every pause (``INPUT_REQUIRED``, the ``pendingRequests`` data
part) with a ``tool`` object beside its ``requestId``: ``kind`` (``tool_approval`` or
``client_tool_call``), ``toolName``, ``callId``, ``arguments`` and, for an approval, the
tool's ``description``; and the status text says what to send back. The answer is taken as
any answer is (``_answers``). This module renders only: it never reads an answer, never
calls the host and never runs a tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from checkflow.agents import ClientToolCall, ToolApprovalRequest, tool_request
from checkflow.workflows import PendingRequest

__all__ = ["CLIENT_TOOL_CALL", "TOOL_APPROVAL", "tool_text", "tool_view"]

TOOL_APPROVAL = "tool_approval"
CLIENT_TOOL_CALL = "client_tool_call"
_ARGUMENTS_SHOWN = 200
"""How much of the arguments the status text quotes (the data part has them whole)."""


def tool_view(request: PendingRequest) -> dict[str, Any] | None:
    """The ``tool`` object of a pending request that waits on a tool call, else ``None``."""
    call = tool_request(request.data)
    if call is None:
        return None
    view: dict[str, Any] = {
        "kind": TOOL_APPROVAL if isinstance(call, ToolApprovalRequest) else CLIENT_TOOL_CALL,
        "toolName": call.tool_name, "callId": call.call_id, "arguments": dict(call.arguments)}
    if isinstance(call, ToolApprovalRequest):
        view["description"] = call.description
    return view


def tool_text(pending: Mapping[str, PendingRequest]) -> str | None:
    """The status text of a task waiting on exactly one tool call: what the call is and
    what answers it (``None`` otherwise: the generic text applies)."""
    if len(pending) != 1:
        return None
    (request,) = pending.values()
    call = tool_request(request.data)
    if call is None:
        return None
    arguments = _quoted(call.arguments)
    if isinstance(call, ClientToolCall):
        return (f"waiting for your tool {call.tool_name} to run with {arguments}: answer "
                f"with its result, a text or data part (request {request.request_id})")
    return (f"waiting for approval to call {call.tool_name} with {arguments}: answer with a "
            f'data part {{"approved": true}}, {{"approved": false, "reason": "..."}}, or '
            f'{{"approved": true, "arguments": {{...}}}} to change them '
            f"(request {request.request_id})")


def _quoted(arguments: Mapping[str, Any]) -> str:
    text = json.dumps(arguments, separators=(",", ":"), sort_keys=True, default=str)
    return text if len(text) <= _ARGUMENTS_SHOWN else text[:_ARGUMENTS_SHOWN] + "..."
