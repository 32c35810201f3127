"""The workflows the A2A conformance tests serve (issue 29), one behaviour per input word.

Gates are marker files in ``$CHECKFLOW_E2E_GATES``, shared with the test process:

- ``ask`` pauses for a bool, then yields ``published`` / ``dropped``;
- ``hold:<name>`` writes ``<name>.entered`` and waits for ``<name>.release`` in its first
  superstep, then yields ``released``;
- anything else is echoed.

``workflow`` takes text; ``whole`` is the same with a start executor that takes the whole
``A2AMessage``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from checkflow.adapters.a2a import A2AMessage
from checkflow.workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


async def _gate(name: str) -> None:
    folder = Path(os.environ["CHECKFLOW_E2E_GATES"])
    (folder / f"{name}.entered").write_text("entered")
    while not (folder / f"{name}.release").exists():  # opened by the test, polled here
        await asyncio.sleep(0.005)


async def _start(text: str, ctx: WorkflowContext) -> None:
    word, _, name = text.partition(":")
    if word == "ask":
        await ctx.request_info({"question": "publish?"}, response_type=bool)
    elif word == "hold":
        await _gate(name)
        await ctx.yield_output("released")
    else:
        await ctx.yield_output(f"echo: {text}")


class Start(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        await _start(text, ctx)

    @response_handler
    async def answered(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output("published" if approved else "dropped")


class WholeStart(Start):
    """The same words, for a start executor that takes the whole ``A2AMessage``."""

    @handler
    async def whole(self, message: A2AMessage, ctx: WorkflowContext) -> None:
        await _start(message.text(), ctx)


workflow = WorkflowBuilder(start_executor=Start("start"), name="a2a-conformance").build()
whole = WorkflowBuilder(start_executor=WholeStart("start"),
                        name="a2a-conformance-whole").build()
