"""The workflow the A2A end-to-end servers serve: ``ask`` pauses for a bool, anything else is
echoed as a text artifact and, streamed, as two chunks of one artifact."""

from __future__ import annotations

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
