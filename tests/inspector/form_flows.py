"""A workflow that asks for structured answers (``serve tests.inspector.form_flows:workflow``).

Its first request's answer is a ``Refund`` (a string, a bounded number, an enum, a boolean, an
optional field and a list of objects), the inspector's generated form fills it field by field;
its second takes any JSON object (a ``dict``), which the form offers as raw JSON. Each answer is
yielded back as an output, so a test reads what the form sent.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

import msgspec

from checkflow.workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


@dataclass
class Item:
    sku: str
    quantity: int


@dataclass
class Refund:
    customer: str
    amount: Annotated[float, msgspec.Meta(ge=0, le=500)]
    priority: Literal["low", "high"]
    rush: bool
    items: list[Item] = field(default_factory=list)
    note: str | None = None


class Desk(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.request_info({"ask": "the refund"}, response_type=Refund)

    @response_handler
    async def refund(self, request: dict, answer: Refund, ctx: WorkflowContext) -> None:
        await ctx.yield_output({"refund": asdict(answer)})
        await ctx.request_info({"ask": "anything else"}, response_type=dict[str, Any])

    @response_handler
    async def extra(self, request: dict, answer: dict[str, Any], ctx: WorkflowContext) -> None:
        await ctx.yield_output({"extra": answer})


desk = Desk(id="desk")
workflow = WorkflowBuilder(start_executor=desk, name="refunds").build()
