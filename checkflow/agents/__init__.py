"""Agents: the ``Agent`` protocol, chat messages and contents, two agents, function tools and
the tool loop, and the bridges between agents and workflows (``AgentExecutor``,
``WorkflowAgent``).

``OpenAIChatAgent`` needs ``httpx`` (the ``openai`` extra) and is imported on first use, so
``checkflow.agents`` itself imports without it. This module only re-exports; it must never
import an optional extra at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from checkflow._extras import requires_extra
from checkflow.agents._base import BaseAgent
from checkflow.agents._executor import AgentExecutor, AgentExecutorRequest, AgentRunUpdateEvent
from checkflow.agents._messages import (
    AgentInput,
    ChatMessage,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    Role,
    TextContent,
    UserInputRequestContent,
)
from checkflow.agents._orchestration import BranchRetry, ConcurrentBuilder, SequentialBuilder
from checkflow.agents._protocol import Agent
from checkflow.agents._scripted import ScriptedAgent
from checkflow.agents._session_checkpoint import (
    CHECKPOINT_KEY,
    SessionCheckpoint,
    load_session_checkpoint,
    store_session_checkpoint,
)
from checkflow.agents._tool_loop import AgentStep, ModelReply, ToolAgent, ToolCallingAgent
from checkflow.agents._tool_requests import (
    CLIENT_TOOLS_KEY,
    ClientTool,
    ClientToolCall,
    ToolApproval,
    ToolApprovalRequest,
    tool_request,
)
from checkflow.agents._tool_trace import ToolTracer, set_tool_tracer
from checkflow.agents._tools import Approval, FunctionTool, ToolContext, tool
from checkflow.agents._types import AgentResponse, AgentResponseUpdate, UsageDetails
from checkflow.agents._workflow_agent import WorkflowAgent

if TYPE_CHECKING:
    from checkflow.agents._openai import OpenAIChatAgent

__all__ = [
    "CHECKPOINT_KEY",
    "CLIENT_TOOLS_KEY",
    "Agent",
    "AgentExecutor",
    "AgentExecutorRequest",
    "AgentInput",
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentRunUpdateEvent",
    "AgentStep",
    "Approval",
    "BaseAgent",
    "BranchRetry",
    "ChatMessage",
    "ClientTool",
    "ClientToolCall",
    "ConcurrentBuilder",
    "Content",
    "FunctionCallContent",
    "FunctionResultContent",
    "FunctionTool",
    "ModelReply",
    "OpenAIChatAgent",
    "Role",
    "ScriptedAgent",
    "SequentialBuilder",
    "SessionCheckpoint",
    "TextContent",
    "ToolAgent",
    "ToolApproval",
    "ToolApprovalRequest",
    "ToolCallingAgent",
    "ToolContext",
    "ToolTracer",
    "UsageDetails",
    "UserInputRequestContent",
    "WorkflowAgent",
    "load_session_checkpoint",
    "set_tool_tracer",
    "store_session_checkpoint",
    "tool",
    "tool_request",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIChatAgent":
        with requires_extra("openai", "checkflow.agents.OpenAIChatAgent"):
            from checkflow.agents._openai import OpenAIChatAgent
        return OpenAIChatAgent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
