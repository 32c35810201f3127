"""``run(shared_state=...)``: keys written with the input, committed in its first snapshot."""

from __future__ import annotations

import pytest

from checkflow.workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    inspect_snapshot,
    response_handler,
)


class Reader(Executor):
    @handler
    async def read(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"{text}: theme={ctx.get_state('theme')} n={ctx.get_state('n')}")
        await ctx.request_info("more?", response_type=bool)

    @response_handler
    async def again(self, request: str, yes: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"theme={ctx.get_state('theme')}")


def workflow():
    return WorkflowBuilder(start_executor=Reader("reader"), name="reader").build()


async def test_the_writes_are_read_by_the_first_superstep_and_held_by_the_input_snapshot() -> None:
    flow = workflow()
    checkpoint = flow.create_checkpoint()
    result = await flow.run("go", checkpoint=checkpoint, shared_state={"theme": "dark", "n": 2})
    assert result.get_outputs() == ["go: theme=dark n=2"]
    first = checkpoint.snapshots[0]
    assert first.metadata["boundary"] == "input_accepted"
    assert inspect_snapshot(first).shared_state == {"theme": "dark", "n": 2}


async def test_writes_with_responses_keep_the_keys_they_do_not_name() -> None:
    flow = workflow()
    checkpoint = flow.create_checkpoint()
    paused = await flow.run("go", checkpoint=checkpoint, shared_state={"theme": "dark", "n": 1})
    (request_id,) = paused.pending_requests
    done = await flow.run(responses={request_id: True}, checkpoint=checkpoint,
                          shared_state={"theme": "light"})
    assert done.get_outputs() == ["theme=light"]
    assert inspect_snapshot(checkpoint.head_snapshot).shared_state == {"theme": "light", "n": 1}


async def test_a_branch_from_before_the_write_does_not_have_it() -> None:
    flow = workflow()
    checkpoint = flow.create_checkpoint()
    paused = await flow.run("go", checkpoint=checkpoint, shared_state={"theme": "dark"})
    pause_head = checkpoint.head_snapshot_id
    (request_id,) = paused.pending_requests
    await flow.run(responses={request_id: True}, checkpoint=checkpoint,
                   shared_state={"theme": "light"})
    assert pause_head is not None
    checkpoint.restart_from(pause_head)
    again = await flow.run(responses={request_id: False}, checkpoint=checkpoint)
    assert again.get_outputs() == ["theme=dark"]


async def test_writes_without_an_input_are_refused_before_anything_commits() -> None:
    flow = workflow()
    checkpoint = flow.create_checkpoint()
    await flow.run("go", checkpoint=checkpoint)
    before = [s.snapshot_id for s in checkpoint.snapshots]
    with pytest.raises(ValueError, match="shared_state is written with an input"):
        await flow.run(checkpoint=checkpoint, shared_state={"theme": "dark"})
    assert [s.snapshot_id for s in checkpoint.snapshots] == before
