"""DESIGN.md section 0, as written, as a program (``test_design_example.py`` runs it).

It runs in a fresh interpreter with the repository on ``sys.path``, exactly as a user's
script would, and prints ``ok`` when every statement of the example held.
"""

import asyncio

from checkflow import (
    Executor,
    FileCheckpointStorage,
    RunStatus,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


class Start(Executor):
    @handler
    async def begin(self, n: int, ctx: WorkflowContext) -> None:
        await ctx.send_message(n)


class Worker(Executor):
    @handler
    async def step(self, n: int, ctx: WorkflowContext) -> None:
        ctx.executor_state["seen"] = ctx.executor_state.get("seen", 0) + 1  # persisted per run
        if n <= 1:
            await ctx.request_info({"question": "publish?"}, response_type=bool)
        else:
            await ctx.send_message(n // 2)

    @response_handler
    async def on_answer(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output("published" if approved else "dropped")


async def main() -> None:
    start, worker = Start(id="start"), Worker(id="worker")
    workflow = (
        WorkflowBuilder(start_executor=start, name="factor")
        .add_edge(start, worker)
        .add_edge(worker, worker)
        .build()
    )  # immutable, reusable

    storage = FileCheckpointStorage("./checkpoints")
    checkpoint = workflow.create_checkpoint(
        checkpoint_id="factor-run-123", checkpoint_storage=storage
    )

    result = await workflow.run(10, checkpoint=checkpoint)  # entry + one snapshot per superstep
    assert result.status is RunStatus.AWAITING_RESPONSES
    (request_id,) = result.pending_requests

    # ...later, in another process:
    checkpoint = await storage.load("factor-run-123")
    result = await workflow.run(responses={request_id: True}, checkpoint=checkpoint)
    assert result.get_outputs() == ["published"]

    # time travel: branch from the entry snapshot; nothing is deleted
    entry = next(s for s in checkpoint.snapshots if s.parent_snapshot_id is None)
    checkpoint.restart_from(entry.snapshot_id)
    await workflow.run(checkpoint=checkpoint)

    # one-shot, stateless, concurrent: one workflow, many runs
    results = await asyncio.gather(*(workflow.run(n) for n in range(100)))

    # what the example implies
    assert all(r.status is RunStatus.AWAITING_RESPONSES for r in results)
    assert len({r.checkpoint.checkpoint_id for r in results}) == 100
    assert entry.state["messages"]["input"] == [{"kind": "message", "data": 10}]
    reloaded = await storage.load("factor-run-123")
    # 10 -> 5 -> 2 -> 1: entry + 5 supersteps; the answer: entry + 1; the branch: 5 more
    assert len(reloaded.snapshots) == 6 + 2 + 5, len(reloaded.snapshots)
    assert reloaded.head_snapshot.state["executor_states"]["worker"]["seen"] == 4
    assert len(reloaded.tips()) == 2
    print("ok", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
