"""Workflows whose requests take the whole A2A message, and whose answers are messages.

``Collector``, by its input word:

- ``collect`` / ``collect:<n>``: asks ``n`` times (default 1) for an ``A2AMessage``; each
  answer is yielded as ``seen(message)``; after the last it completes with an
  ``A2AMessage`` naming how many it got (so the COMPLETED status carries it);
- ``ask``: asks for a ``bool`` (a request that cannot take a file part);
- ``two``: asks for a ``bool`` and for an ``A2AMessage`` at once;
- ``report``: an ``Artifact``, then a final ``A2AMessage`` with metadata;
- ``plain``: a text output only (a COMPLETED status without a message).
"""

from __future__ import annotations

from typing import Any

from checkflow.adapters.a2a import A2AMessage, A2APart, Artifact
from checkflow.workflows import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

ASK = {"question": "send me the file"}


def seen(message: A2AMessage) -> dict[str, Any]:
    """What the workflow saw of an answer, as JSON (file bytes as their length)."""
    return {
        "message_id": message.message_id, "task_id": message.task_id,
        "context_id": message.context_id, "role": message.role, "metadata": message.metadata,
        "parts": [{"kind": p.kind, "text": p.text, "data": p.data,
                   "raw": len(p.raw) if p.raw is not None else None, "url": p.url,
                   "filename": p.filename, "media_type": p.media_type,
                   "metadata": p.metadata} for p in message.parts]}


class Collector(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        word, _, count = text.partition(":")
        if word == "collect":
            ctx.executor_state["left"] = int(count or 1)
            ctx.executor_state["got"] = 0
            await ctx.request_info(ASK, response_type=A2AMessage)
        elif word == "ask":
            await ctx.request_info({"question": "publish?"}, response_type=bool)
        elif word == "two":
            await ctx.request_info({"question": "publish?"}, response_type=bool)
            await ctx.request_info(ASK, response_type=A2AMessage)
        elif word == "report":
            await ctx.yield_output(Artifact(name="report", parts=[A2APart.of_text("figures")]))
            await ctx.yield_output(A2AMessage(parts=[A2APart.of_text("done: see the report"),
                                                     A2APart.of_data({"rows": 3})],
                                              metadata={"summary": True}))
        else:
            await ctx.yield_output(f"plain: {text}")

    @response_handler
    async def got_message(self, request: dict, message: A2AMessage,
                          ctx: WorkflowContext) -> None:
        await ctx.yield_output(seen(message))
        left = int(ctx.executor_state.get("left", 1)) - 1
        got = int(ctx.executor_state.get("got", 0)) + 1
        ctx.executor_state.update(left=left, got=got)
        if left > 0:
            await ctx.request_info(ASK, response_type=A2AMessage)
        else:
            await ctx.yield_output(A2AMessage(parts=[A2APart.of_text(f"got {got} message(s)")],
                                              metadata={"got": got}))

    @response_handler
    async def got_bool(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output("published" if approved else "dropped")


def build_collector() -> Workflow:
    return WorkflowBuilder(start_executor=Collector("collector"), name="collector").build()
