"""The workflows the A2A conformance tests serve (issue 29), one behaviour per input word.

Gates are marker files in ``$CHECKFLOW_E2E_GATES``, shared with the test process:

- ``ask`` pauses for a bool, then yields ``published`` / ``dropped``; ``ask:<name>`` holds
  the answer on the gate ``<name>`` first;
- ``hold:<name>`` writes ``<name>.entered`` and waits for ``<name>.release`` in its first
  superstep, then a second superstep yields ``released`` (a cancel lands in between);
- ``attach`` pauses for a whole ``A2AMessage``; the answer yields what arrived (its
  ``messageId``, metadata and each file part's name and size or URL), then completes with
  an ``A2AMessage`` (the COMPLETED status message);
- anything else is echoed.

``workflow`` takes text; ``whole`` is the same with a start executor that takes the whole
``A2AMessage``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from checkflow.adapters.a2a import A2AMessage, A2APart
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
        ctx.executor_state["name"] = name
        await ctx.request_info({"question": "publish?"}, response_type=bool)
    elif word == "hold":
        await _gate(name)
        await ctx.send_message("released")
    elif word == "attach":
        await ctx.request_info({"question": "attach the file"}, response_type=A2AMessage)
    else:
        await ctx.yield_output(f"echo: {text}")


class Start(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        await _start(text, ctx)

    @response_handler
    async def answered(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        name = str(ctx.executor_state.get("name") or "")
        if name:
            await _gate(name)
        await ctx.yield_output("published" if approved else "dropped")

    @response_handler
    async def attached(self, request: dict, message: A2AMessage, ctx: WorkflowContext) -> None:
        files = [[p.filename, len(p.raw) if p.raw is not None else p.url]
                 for p in message.parts if p.kind == "file"]
        await ctx.yield_output({"messageId": message.message_id, "files": files,
                                "metadata": message.metadata})
        await ctx.yield_output(A2AMessage(parts=[A2APart.of_text(f"{len(files)} file(s) in")],
                                          metadata={"files": len(files)}))


class WholeStart(Start):
    """The same words, for a start executor that takes the whole ``A2AMessage``."""

    @handler
    async def whole(self, message: A2AMessage, ctx: WorkflowContext) -> None:
        await _start(message.text(), ctx)


class Finish(Executor):
    @handler
    async def finish(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(text)


def _build(start: Executor, name: str) -> Any:
    return WorkflowBuilder(start_executor=start, name=name).add_edge(
        start, Finish("finish")).build()


workflow = _build(Start("start"), "a2a-conformance")
whole = _build(WholeStart("start"), "a2a-conformance-whole")
