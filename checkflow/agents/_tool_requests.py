"""What a tool call pauses for: an approval, or the client running one of its own tools.

Both are ordinary workflow requests (``ctx.request_info``) raised by ``AgentExecutor`` under
the model's call id, so they live in the checkpoint like any pause and every protocol answers
them. ``ClientTool`` is a tool a client declared for one turn; adapters write the turn's list
to the shared state under ``CLIENT_TOOLS_KEY``, committed with the turn's input. This module
must never run a tool.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from checkflow.agents._messages import UserInputRequestContent
from checkflow.state import register_state_type

__all__ = ["CLIENT_TOOLS_KEY", "ClientTool", "ClientToolCall", "ToolApproval",
           "ToolApprovalRequest", "client_tools", "tool_request"]

CLIENT_TOOLS_KEY: Final = "checkflow.client_tools"
"""The shared-state key of the tools the client declared for this turn (a ``list[ClientTool]``)."""


class ToolApprovalRequest(msgspec.Struct, frozen=True, kw_only=True):
    """The model asked to run ``tool_name`` with ``arguments``; a person must approve first.

    Answered with a ``ToolApproval`` under ``call_id`` (the request id); ``description``
    is the tool's, for the person deciding.
    """

    tool_name: str
    call_id: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    description: str = ""


class ToolApproval(msgspec.Struct, frozen=True, kw_only=True):
    """The answer to a ``ToolApprovalRequest``.

    ``approved=False`` denies the call (``reason`` is told to the model); ``approved=True``
    runs it, with ``arguments`` instead of the model's when given (validated again).
    """

    approved: bool
    reason: str | None = None
    arguments: dict[str, Any] | None = None


class ClientTool(msgspec.Struct, frozen=True, kw_only=True):
    """A tool the client declared and runs itself: offered to the model for one turn."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}})


class ClientToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """The model called a client's tool: the client runs it and answers with its result
    (any JSON value, usually a string) under ``call_id``."""

    tool_name: str
    call_id: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


for _cls in (ToolApprovalRequest, ToolApproval, ClientTool, ClientToolCall):
    _cls.__module__ = "checkflow.agents"  # the public name, in messages and signatures
    register_state_type(_cls, type_id=f"checkflow.{_cls.__name__}")


def tool_request(data: Any) -> ToolApprovalRequest | ClientToolCall | None:
    """The tool call a pending request's ``data`` pauses for, if it is one.

    ``AgentExecutor`` asks with a ``UserInputRequestContent`` whose ``data`` is the
    ``ToolApprovalRequest`` or ``ClientToolCall`` (so agents' pauses share one response
    handler); adapters read it through this.
    """
    if isinstance(data, UserInputRequestContent):
        data = data.data
    return data if isinstance(data, (ToolApprovalRequest, ClientToolCall)) else None


def client_tools(value: Any) -> list[ClientTool]:
    """The shared-state value under ``CLIENT_TOOLS_KEY`` as ``ClientTool``s (JSON objects
    are converted; anything else is ignored)."""
    if not isinstance(value, Iterable) or isinstance(value, (str, bytes, dict)):
        return []
    found: list[ClientTool] = []
    for item in value:
        if isinstance(item, ClientTool):
            found.append(item)
        elif isinstance(item, dict):
            try:
                found.append(msgspec.convert(item, ClientTool))
            except msgspec.ValidationError:
                continue
    return found
