"""Many concurrent runs on one workflow object.

Shows: the workflow is a definition and keeps nothing of a run, so one instance serves any
number of runs at once, each on its own checkpoint (here 200 in memory and 20 in files);
two runs on one checkpoint are refused with ``CheckpointInUseError`` instead.

Run it: ``python samples/concurrent_runs.py`` (it writes ``./checkpoints``). A second run
continues the 20 file checkpoints the first left there (``square-0`` ... ``square-19``, each a
run longer); the in-memory ones are new every time.
"""

from __future__ import annotations

import asyncio

from checkflow import (
    Checkpoint,
    CheckpointInUseError,
    CheckpointNotFoundError,
    Executor,
    FileCheckpointStorage,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)


class Square(Executor):
    @handler
    async def square(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        await asyncio.sleep(0)  # let the other runs interleave with this one
        ctx.executor_state["n"] = n
        await ctx.yield_output(n * n)


workflow = WorkflowBuilder(Square(id="square"), name="squares").build()


async def load_or_create(storage: FileCheckpointStorage, checkpoint_id: str) -> Checkpoint:
    """The stored checkpoint to continue, or a new one under that id."""
    try:
        return await storage.load(checkpoint_id)
    except CheckpointNotFoundError:
        return workflow.create_checkpoint(checkpoint_id=checkpoint_id, checkpoint_storage=storage)


async def main(root: str = "./checkpoints") -> list[int]:
    results = await asyncio.gather(*(workflow.run(n) for n in range(200)))
    squares = [r.get_outputs()[0] for r in results]
    print(f"{len(results)} runs, {len({r.checkpoint.checkpoint_id for r in results})} checkpoints")

    storage = FileCheckpointStorage(root)
    checkpoints = [await load_or_create(storage, f"square-{n}") for n in range(20)]
    await asyncio.gather(*(workflow.run(n, checkpoint=c) for n, c in enumerate(checkpoints)))
    ours = [i for i in await storage.list_checkpoint_ids() if i.startswith("square-")]
    print(f"{len(ours)} checkpoints in files")  # other samples share ./checkpoints

    shared = workflow.create_checkpoint()
    first = workflow.run(1, checkpoint=shared, stream=True)
    await anext(first)  # the run has started: it holds the checkpoint until it ends
    try:
        await workflow.run(2, checkpoint=shared)
    except CheckpointInUseError:
        print("a second run on the same checkpoint was refused")
    await first.get_result()
    return squares


if __name__ == "__main__":
    asyncio.run(main())
