"""A publishing workflow with a human in the loop: draft, ask for approval, publish or drop.

Run it as a server with ``make serve`` (or ``python -m checkflow serve samples.approval:workflow``)
and try it with curl: the first run pauses with a pending request; answering it with
``{"responses": {"<request_id>": true}}`` publishes. The conversation survives a restart of
the server because its checkpoint lives in the file storage (``./.checkflow``): a server
started again in the same folder continues every conversation there, and a new message to a
finished one starts its next draft. A new conversation id starts afresh.
"""

from __future__ import annotations

from dataclasses import dataclass

from checkflow.workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


@dataclass(frozen=True)
class Draft:
    """A piece of text waiting for a reviewer's decision."""

    topic: str
    text: str


class Writer(Executor):
    """Turns a topic into a draft."""

    @handler
    async def write(self, topic: str, ctx: WorkflowContext[Draft]) -> None:
        ctx.executor_state["drafts"] = ctx.executor_state.get("drafts", 0) + 1
        await ctx.send_message(Draft(topic=topic, text=f"Five things to know about {topic}."))


class Reviewer(Executor):
    """Asks a human whether to publish, then publishes or drops the draft."""

    @handler
    async def review(self, draft: Draft, ctx: WorkflowContext) -> None:
        # the request carries its own draft: two drafts queued in one conversation each
        # publish their own text, whatever order they are answered in
        await ctx.request_info(
            {"question": "Publish this draft?", "draft": draft.text}, response_type=bool
        )

    @response_handler
    async def decide(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"published: {request['draft']}" if approved else "dropped")


writer, reviewer = Writer(id="writer"), Reviewer(id="reviewer")
workflow = (
    WorkflowBuilder(start_executor=writer, name="approval").add_edge(writer, reviewer).build()
)
