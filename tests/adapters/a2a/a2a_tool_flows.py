"""The support sample's agent as the A2A tool tests serve it.

A start executor declares one client tool, ``confirm_with_user``, for every turn (A2A has no
declaration of its own, so here the workflow names the tool its clients run) and hands the
text on to the sample's agent. ``refund both`` makes the desk ask for two refunds in one
round (two approvals pending at once); anything else is the sample's ``DeskModel``. The
A2A unit tests build it; the end-to-end test serves ``workflow``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from checkflow.agents import (
    CLIENT_TOOLS_KEY,
    AgentExecutor,
    AgentResponseUpdate,
    ChatMessage,
    ClientTool,
    FunctionCallContent,
    FunctionResultContent,
    ModelReply,
    TextContent,
)
from checkflow.workflows import Executor, Workflow, WorkflowBuilder, WorkflowContext, handler
from samples.support import DeskModel, lookup_order, refund

CONFIRM = ClientTool(
    name="confirm_with_user", description="Ask the user to confirm something.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}},
                "required": ["question"]})

BOTH = [FunctionCallContent("call_a", "refund", {"order_id": "1001", "amount": 40.0}),
        FunctionCallContent("call_b", "refund", {"order_id": "1002", "amount": 25.5})]


class DeclareTools(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext[str]) -> None:
        ctx.set_state(CLIENT_TOOLS_KEY, [CONFIRM])
        await ctx.send_message(text)


class TwoRefunds(DeskModel):
    """``DeskModel``, plus ``refund both``: two refund calls at once, then their results."""

    async def _complete(self, history: Sequence[ChatMessage], tools: list[dict[str, Any]],
                        tool_choice: str | None, stream: bool
                        ) -> AsyncIterator[AgentResponseUpdate | ModelReply]:
        user = next((m.text for m in reversed(history) if m.role == "user"), "")
        if "refund both" not in user:
            async for item in super()._complete(history, tools, tool_choice, stream):
                yield item
            return
        last = history[-1]
        if last.role != "tool":
            yield ModelReply(ChatMessage("assistant", list(BOTH)))
            return
        results = [str(c.result) for c in last.contents if isinstance(c, FunctionResultContent)]
        yield ModelReply(ChatMessage("assistant", [TextContent(" | ".join(results))]))


def build() -> Workflow:
    declare = DeclareTools("declare")
    agent = AgentExecutor(TwoRefunds("support", tools=[lookup_order, refund]),
                          output_response=True, stream=True)
    return WorkflowBuilder(start_executor=declare, name="a2a-tools").add_edge(
        declare, agent).build()


workflow = build()  # served by the end-to-end test (tests.adapters.a2a.a2a_tool_flows)
