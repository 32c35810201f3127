"""What each pending request is shown as: a function call or an approval request, and its name.

A tool call an agent paused on is shown as the Responses API shows tools: a call waiting for
a person's approval (``ToolApprovalRequest``) is an ``mcp_approval_request`` named after the
tool, a call of one of the client's own tools (``ClientToolCall``) a ``function_call`` named
after it; both carry the call's arguments as JSON and keep the request id (the model's call
id) as their id. Every other request is shown under ``request_info`` with the request id, its
data and its answer schema, as an approval when it is approval-shaped (``_approval``). This
module must never call the host.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from checkflow.adapters.foundry._approval import is_approval
from checkflow.adapters.foundry._objects import REQUEST_INFO, request_arguments
from checkflow.agents import ClientToolCall, ToolApprovalRequest, tool_request
from checkflow.hosting import jsonable, pending_view
from checkflow.workflows import PendingRequest

__all__ = ["Shown", "shown_as"]


@dataclass(frozen=True, slots=True)
class Shown:
    """A pending request as an output item: its kind, function name and JSON arguments."""

    kind: Literal["function_call", "mcp_approval_request"]
    name: str
    arguments: str


def _json(value: object) -> str:
    return json.dumps(jsonable(value), separators=(",", ":"), ensure_ascii=False)


def shown_as(request: PendingRequest) -> Shown:
    """How ``request`` is listed in a response's output."""
    asked = tool_request(request.data)
    if isinstance(asked, ToolApprovalRequest):
        return Shown("mcp_approval_request", asked.tool_name, _json(asked.arguments))
    if isinstance(asked, ClientToolCall):
        return Shown("function_call", asked.tool_name, _json(asked.arguments))
    view = pending_view(request)
    arguments = request_arguments(request.request_id, view["data"], view["response_schema"])
    kind: Literal["function_call", "mcp_approval_request"] = (
        "mcp_approval_request" if is_approval(request) else "function_call")
    return Shown(kind, REQUEST_INFO, arguments)
