"""The specification's factor example, with file checkpoints.

Shows: a workflow object that keeps nothing between runs; a run that pauses for a human,
resumed from storage as another process would; restarting from the entry snapshot into a
new branch; and 100 one-shot runs of the same workflow at once.

Run it: ``python samples/factor.py`` (it writes ``./checkpoints``). Each run starts a new
checkpoint (its id generated), so it can be run again and again in one folder.
"""

from __future__ import annotations

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
    async def begin(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n)


class Worker(Executor):
    @handler
    async def step(self, n: int, ctx: WorkflowContext[int]) -> None:
        ctx.executor_state["seen"] = ctx.executor_state.get("seen", 0) + 1  # in the snapshot
        if n <= 1:
            await ctx.request_info({"question": "publish?"}, response_type=bool)
        else:
            await ctx.send_message(n // 2)

    @response_handler
    async def on_answer(self, request: dict, approved: bool,
                        ctx: WorkflowContext[int, str]) -> None:
        await ctx.yield_output("published" if approved else "dropped")


def build():
    start, worker = Start(id="start"), Worker(id="worker")
    return (WorkflowBuilder(start_executor=start, name="factor")
            .add_edge(start, worker).add_edge(worker, worker).build())


async def main(root: str = "./checkpoints") -> None:
    workflow = build()
    storage = FileCheckpointStorage(root)
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)  # a new id each run
    result = await workflow.run(10, checkpoint=checkpoint)
    assert result.status is RunStatus.AWAITING_RESPONSES
    (request_id,) = result.pending_requests
    print(f"paused after {len(checkpoint.snapshots)} snapshots, asking {request_id}")

    checkpoint = await storage.load(checkpoint.checkpoint_id)  # e.g. in another process
    result = await workflow.run(responses={request_id: True}, checkpoint=checkpoint)
    print("outputs:", result.get_outputs())

    entry = next(s for s in checkpoint.snapshots if s.parent_snapshot_id is None)
    checkpoint.restart_from(entry.snapshot_id)  # a branch: nothing is deleted
    await workflow.run(checkpoint=checkpoint)
    print(f"branched: {len(checkpoint.snapshots)} snapshots, {len(checkpoint.tips())} tips")

    results = await asyncio.gather(*(workflow.run(n) for n in range(100)))
    print(f"{len({r.checkpoint.checkpoint_id for r in results})} one-shot runs, one workflow")


if __name__ == "__main__":
    asyncio.run(main())
