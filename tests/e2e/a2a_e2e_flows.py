"""The workflow the A2A end-to-end servers serve: ``ask`` pauses for a bool, ``hold:<name>``
waits on a marker-file gate, ``chunks`` yields one artifact in two chunks, anything else is
echoed as a text artifact."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from checkflow.adapters.a2a import A2APart, Artifact
from checkflow.workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


class Start(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        if text == "ask":
            await ctx.request_info({"question": "publish?"}, response_type=bool)
        elif text.startswith("hold:"):  # a marker-file gate shared with the test process
            folder = Path(os.environ["CHECKFLOW_E2E_GATES"])
            name = text.removeprefix("hold:")
            (folder / f"{name}.entered").write_text("entered")
            while not (folder / f"{name}.release").exists():
                await asyncio.sleep(0.005)
            await ctx.yield_output("released")
        elif text == "chunks":
            await ctx.yield_output(Artifact(name="doc", parts=[A2APart.of_text("a")]))
            await ctx.yield_output(Artifact(name="doc", parts=[A2APart.of_text("b")],
                                            append=True, last_chunk=True))
        else:
            await ctx.yield_output(f"echo: {text}")

    @response_handler
    async def answered(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output("published" if approved else "dropped")


workflow = WorkflowBuilder(start_executor=Start("start"), name="a2a-e2e").build()
