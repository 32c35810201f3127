"""Workflows the hosting tests serve: three supersteps, a human-in-the-loop pause, a failure
on demand, and a run held on an explicit gate (an asyncio.Event, never a sleep)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from checkflow.workflows import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


@dataclass(frozen=True)
class Order:
    item: str
    quantity: int


@dataclass
class Gate:
    """Holds a run whose message is "hold" until the test releases it."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    runs: int = 0


class Start(Executor):
    def __init__(self, id: str, gate: Gate | None) -> None:
        super().__init__(id)
        self._gate = gate

    @handler
    async def order(self, order: Order, ctx: WorkflowContext) -> None:
        await ctx.send_message(f"{order.quantity} x {order.item}")

    @handler
    async def text(self, text: str, ctx: WorkflowContext) -> None:
        if text == "boom":
            raise RuntimeError("the start executor exploded")
        if text == "hold" and self._gate is not None:
            self._gate.runs += 1
            self._gate.entered.set()
            await asyncio.wait_for(self._gate.release.wait(), 10)
        await ctx.send_message(text)


class Shout(Executor):
    @handler
    async def shout(self, text: str, ctx: WorkflowContext) -> None:
        ctx.executor_state["seen"] = ctx.executor_state.get("seen", 0) + 1
        await ctx.send_message(text.upper())


class Finish(Executor):
    @handler
    async def finish(self, text: str, ctx: WorkflowContext) -> None:
        if text.startswith("ASK"):
            await ctx.request_info({"question": f"approve {text}?"}, response_type=bool)
        else:
            await ctx.yield_output(text)

    @response_handler
    async def answered(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output("approved" if approved else "rejected")


class Audit(Executor):
    @handler
    async def audit(self, text: str, ctx: WorkflowContext) -> None:
        ctx.executor_state["last"] = text


def build(gate: Gate | None = None, *, audited: bool = False) -> Workflow:
    """start -> shout -> finish (three supersteps); ``audited`` adds an edge (a new graph)."""
    start, shout, finish = Start("start", gate), Shout("shout"), Finish("finish")
    builder = WorkflowBuilder(start_executor=start, name="shouter").add_chain(
        [start, shout, finish]
    )
    if audited:
        builder.add_edge(shout, Audit("audit"))
    return builder.build()
