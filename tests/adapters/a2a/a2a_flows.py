"""Workflows the A2A tests serve, one behaviour per input word.

``hello`` -> a text artifact; ``data`` -> a data artifact; ``file`` -> a file artifact;
``chunks`` -> one artifact in two chunks; ``message`` -> a direct A2AMessage reply;
``reject`` -> TaskRejected; ``boom`` -> a failure; ``ask`` -> a pause for a bool (and
``ask2`` pauses twice); ``hold`` -> waits on the gate (an asyncio.Event, never a sleep);
a JSON object -> echoed back as data. ``echo_message`` takes the whole ``A2AMessage``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from checkflow.adapters.a2a import A2AMessage, A2APart, Artifact, TaskRejected
from checkflow.workflows import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


@dataclass
class Gate:
    """Holds a ``hold`` run until the test releases it; ``answer`` does the same for the
    response handler (to hold a continuation)."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    answer_entered: asyncio.Event = field(default_factory=asyncio.Event)
    answer_release: asyncio.Event | None = None
    runs: Counter[str] = field(default_factory=Counter)
    """How often each handler really ran: the start by its input word, the answer as
    ``"answer"`` (so a test shows a replay runs nothing)."""


class Start(Executor):
    def __init__(self, id: str, gate: Gate) -> None:
        super().__init__(id)
        self._gate = gate

    @handler
    async def text(self, text: str, ctx: WorkflowContext) -> None:
        self._gate.runs[text] += 1
        if text == "hello":
            await ctx.yield_output("hello back")
        elif text == "data":
            await ctx.yield_output({"answer": 42, "items": [1, 2]})
        elif text == "file":
            await ctx.yield_output(b"\x00binary\xff")
        elif text == "chunks":
            await ctx.yield_output(Artifact(name="report", parts=[A2APart.of_text("part 1 ")]))
            await ctx.yield_output(Artifact(name="report", parts=[A2APart.of_text("part 2")],
                                            append=True, last_chunk=True))
        elif text == "message":  # not a direct reply: this start does not take A2AMessage
            await ctx.yield_output(A2AMessage(parts=[A2APart.of_text("as an artifact")]))
        elif text == "reject":
            raise TaskRejected("I do not do that")
        elif text == "boom":
            raise RuntimeError("the start executor exploded")
        elif text in ("ask", "ask2"):
            ctx.executor_state["asks"] = 2 if text == "ask2" else 1
            await ctx.request_info({"question": "publish?"}, response_type=bool)
        elif text == "hold":
            self._gate.entered.set()
            await asyncio.wait_for(self._gate.release.wait(), 10)
            await ctx.send_message("released")  # a second superstep: a cancel lands here
        else:
            await ctx.yield_output(f"echo: {text}")

    @handler
    async def data(self, data: dict[str, Any], ctx: WorkflowContext) -> None:
        await ctx.yield_output({"echo": data})

    @response_handler
    async def answered(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        self._gate.runs["answer"] += 1
        if self._gate.answer_release is not None:
            self._gate.answer_entered.set()
            await asyncio.wait_for(self._gate.answer_release.wait(), 10)
        ctx.executor_state["asks"] = ctx.executor_state.get("asks", 1) - 1
        if ctx.executor_state["asks"] > 0:
            await ctx.request_info({"question": "really publish?"}, response_type=bool)
        else:
            await ctx.yield_output("published" if approved else "dropped")


class Finish(Executor):
    @handler
    async def finish(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(text)


def build(gate: Gate | None = None) -> Workflow:
    """The workflow behind every word above (``hold`` ends in a second executor)."""
    start = Start("start", gate or Gate())
    return WorkflowBuilder(start_executor=start, name="a2a-test").add_edge(
        start, Finish("finish")).build()


class Inspect(Executor):
    def __init__(self, id: str, gate: Gate) -> None:
        super().__init__(id)
        self._gate = gate

    @handler
    async def whole(self, message: A2AMessage, ctx: WorkflowContext) -> None:
        if message.text() == "hold":  # held in its first superstep, before any output
            self._gate.entered.set()
            await asyncio.wait_for(self._gate.release.wait(), 10)
            await ctx.send_message("released")
            return
        if message.text() == "reply":
            await ctx.yield_output(A2AMessage(parts=[A2APart.of_text("a direct reply")]))
            return
        if message.text() == "reply twice":
            await ctx.yield_output(A2AMessage(parts=[A2APart.of_text("one")]))
            await ctx.yield_output(A2AMessage(parts=[A2APart.of_text("two")]))
            return
        await ctx.yield_output({
            "message_id": message.message_id, "context_id": message.context_id,
            "task_id": message.task_id, "role": message.role, "metadata": message.metadata,
            "parts": [{"kind": p.kind, "text": p.text, "data": p.data,
                       "raw": len(p.raw) if p.raw is not None else None, "url": p.url,
                       "metadata": p.metadata} for p in message.parts]})


def build_whole_message(gate: Gate | None = None) -> Workflow:
    """A start executor that declares ``A2AMessage`` as its input (``hold`` ends in a second
    executor, as above)."""
    inspect = Inspect("inspect", gate or Gate())
    return WorkflowBuilder(start_executor=inspect, name="inspector").add_edge(
        inspect, Finish("finish")).build()
