"""The support sample with its tool and its model gated, for kill tests (``serve`` imports it).

Each call of ``refund`` writes ``refund-<n>.entered`` (its call id inside) in
``$CHECKFLOW_E2E_GATES``; while ``hold-refund`` exists there it then waits for
``refund-<n>.release``. While ``hold-answer`` exists, the model's call that reads the refund's
result writes ``answer.entered`` and waits for ``answer.release``. Otherwise it is the sample.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from checkflow.agents import (
    AgentResponseUpdate,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    ModelReply,
    ToolContext,
    tool,
)
from samples.support import DeskModel, build, lookup_order
from samples.support import refund as sample_refund

GATES = Path(os.environ["CHECKFLOW_E2E_GATES"])


@tool(approval="always")
def refund(order_id: str, amount: float, context: ToolContext) -> dict[str, Any]:
    """Refund an amount on an order (a person approves every refund first)."""
    number = len(list(GATES.glob("refund-*.entered")))
    (GATES / f"refund-{number}.entered").write_text(context.call_id)
    release = GATES / f"refund-{number}.release"
    while (GATES / "hold-refund").exists() and not release.exists():
        time.sleep(0.005)  # the gate, polled in the tool's worker thread
    return dict(sample_refund.function(order_id, amount, context))


class GatedDesk(DeskModel):
    async def _complete(self, history: Sequence[ChatMessage], tools: list[dict[str, Any]],
                        tool_choice: str | None, stream: bool
                        ) -> AsyncIterator[AgentResponseUpdate | ModelReply]:
        if "refund" in _last_results(history) and (GATES / "hold-answer").exists():
            (GATES / "answer.entered").write_text("entered")
            while not (GATES / "answer.release").exists():
                await asyncio.sleep(0.005)
        async for item in super()._complete(history, tools, tool_choice, stream):
            yield item


def _last_results(history: Sequence[ChatMessage]) -> set[str]:
    """The names of the tools whose results the model is about to read."""
    if not history or history[-1].role != "tool":
        return set()
    names = {c.call_id: c.name for m in history for c in m.contents
             if isinstance(c, FunctionCallContent)}
    return {names.get(r.call_id, "") for r in history[-1].contents
            if isinstance(r, FunctionResultContent)}


workflow = build(GatedDesk("support", tools=[lookup_order, refund]))
