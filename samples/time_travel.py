"""Time travel: restart a finished run from an earlier snapshot into a new branch, then print
the snapshot tree.

Shows: ``checkpoint.restart_from(snapshot_id)`` moves the head back without deleting anything;
the next run grows a second branch; ``inspect_snapshot`` reads what a snapshot held. Its last
line is the command that prints the same tree from the storage, without this code
(``python -m checkflow checkpoints tree ID --storage file:.``; ``--mermaid`` for a Mermaid
flowchart).

Run it: ``python samples/time_travel.py`` (it writes ``./checkpoints``). Each run starts a new
checkpoint (its id generated), so it can be run again and again in one folder.
"""

from __future__ import annotations

import asyncio

from checkflow import (
    Checkpoint,
    Executor,
    FileCheckpointStorage,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    inspect_snapshot,
)


class Countdown(Executor):
    @handler
    async def tick(self, n: int, ctx: WorkflowContext[int, str]) -> None:
        ctx.set_state("last", n)
        if n > 0:
            await ctx.send_message(n - 1)
        else:
            await ctx.yield_output("liftoff")


def tree(checkpoint: Checkpoint) -> str:
    """One line per snapshot, indented by depth; the head marked."""
    lines = []
    stack = [s for s in checkpoint.snapshots if s.parent_snapshot_id is None]
    while stack:
        snapshot = stack.pop()
        depth = len(checkpoint.ancestors(snapshot.snapshot_id)) - 1
        view = inspect_snapshot(snapshot)
        head = "  <- head" if snapshot.snapshot_id == checkpoint.head_snapshot_id else ""
        lines.append(f"{'  ' * depth}{snapshot.snapshot_id} superstep={view.superstep} "
                     f"last={view.shared_state.get('last')}{head}")
        stack.extend(reversed(checkpoint.children(snapshot.snapshot_id)))
    return "\n".join(lines)


async def main(root: str = "./checkpoints") -> Checkpoint:
    counter = Countdown(id="countdown")
    workflow = WorkflowBuilder(counter, name="countdown").add_edge(counter, counter).build()
    storage = FileCheckpointStorage(root)
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)  # a new id each run
    await workflow.run(3, checkpoint=checkpoint)

    # go back to the snapshot after the first superstep and run on from there
    earlier = next(s for s in checkpoint.snapshots if inspect_snapshot(s).superstep == 1)
    checkpoint.restart_from(earlier.snapshot_id)
    result = await workflow.run(checkpoint=checkpoint)
    print("the branch finished with", result.get_outputs())
    print(tree(await storage.load(checkpoint.checkpoint_id)))
    print(f"the same tree: python -m checkflow checkpoints tree {checkpoint.checkpoint_id} "
          f"--storage file:.")
    return checkpoint


if __name__ == "__main__":
    asyncio.run(main())
