"""Workflows the telemetry tests trace: a pause and resume, a failure, a nested child, an
agent, and an executor that opens a span of its own (as an instrumented HTTP call would)."""

from __future__ import annotations

from opentelemetry import trace

from checkflow.agents import AgentExecutor, ScriptedAgent
from checkflow.workflows import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
    response_handler,
)


class Ask(Executor):
    """Asks for approval of what it is sent; "boom" fails it."""

    @handler
    async def text(self, text: str, ctx: WorkflowContext) -> None:
        if text == "boom":
            raise RuntimeError("the ask executor exploded")
        with trace.get_tracer("user-code").start_as_current_span("user.call"):
            pass  # the executor's own outbound call
        await ctx.request_info({"question": f"approve {text}?"}, response_type=bool)

    @response_handler
    async def answered(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        await ctx.send_message("approved" if approved else "rejected")


class Echo(Executor):
    @handler
    async def echo(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(text)


def approval() -> Workflow:
    """ask -> echo: a message pauses at ask; the answer resumes it and echo yields."""
    ask, echo = Ask("ask"), Echo("echo")
    return WorkflowBuilder(start_executor=ask, name="approval").add_edge(ask, echo).build()


class Upper(Executor):
    @handler
    async def upper(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(text.upper())


def nested() -> Workflow:
    """outer: a WorkflowExecutor running the one-step "inner" workflow, then echo."""
    inner = WorkflowBuilder(start_executor=Upper("upper"), name="inner").build()
    child, echo = WorkflowExecutor(inner, id="child"), Echo("echo")
    return WorkflowBuilder(start_executor=child, name="outer").add_edge(child, echo).build()


def agent() -> Workflow:
    """One AgentExecutor answering from a script."""
    writer = AgentExecutor(ScriptedAgent("writer", ["a draft"]), output_response=True)
    return WorkflowBuilder(start_executor=writer, name="writing").build()


workflow = approval()
"""The target ``serve`` runs in the process tests."""
