"""A nested workflow: a whole review workflow as one node of a publishing workflow.

Shows: ``WorkflowExecutor`` runs the child inside a superstep of the parent, its state kept in
the parent's snapshots; the child's request surfaces as ``review/<child request id>`` and the
answer is routed back; ``to_mermaid()`` draws the child as a subgraph.

Run it: ``python samples/nested.py``. It writes nothing (the checkpoint is in memory), so every
run starts afresh.
"""

from __future__ import annotations

import asyncio

from checkflow import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
    response_handler,
)


class Draft(Executor):
    @handler
    async def draft(self, topic: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"All about {topic}.")


class Approve(Executor):
    @handler
    async def ask(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.request_info({"approve": text}, response_type=bool, request_id="approve")

    @response_handler
    async def answered(self, request: dict, ok: bool, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(request["approve"] if ok else "")


class Publish(Executor):
    @handler
    async def publish(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(f"published: {text}" if text else "nothing to publish")


def build():
    approve = Approve(id="approve")
    review = WorkflowBuilder(approve, name="review").build()
    draft, nested, publish = Draft(id="draft"), WorkflowExecutor(review, id="review"), \
        Publish(id="publish")
    return (WorkflowBuilder(draft, name="publishing")
            .add_edge(draft, nested).add_edge(nested, publish).build())


async def main() -> list[str]:
    workflow = build()
    checkpoint = workflow.create_checkpoint()
    paused = await workflow.run("owls", checkpoint=checkpoint)
    print("pending:", list(paused.pending_requests))  # ['review/approve']
    done = await workflow.run(responses={"review/approve": True}, checkpoint=checkpoint)
    print("outputs:", done.get_outputs())
    print(workflow.to_mermaid())
    return done.get_outputs()


if __name__ == "__main__":
    asyncio.run(main())
