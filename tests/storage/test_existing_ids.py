"""An id already stored, and a conflict, each say their real cause, on every backend.

Run twice, a program that creates its checkpoint under a fixed id meets its own earlier run:
that is ``CheckpointExistsError`` naming the id and the two ways on, never "another writer
committed first". A real conflict names the head the storage has, when it was written and how
it relates to the head the losing object expected. Nothing committed is lost either way.
"""

from __future__ import annotations

import pytest

from checkflow import Executor, WorkflowBuilder, WorkflowContext, handler
from checkflow.checkpoints import Checkpoint, CheckpointStorage, ExistenceCheck
from checkflow.errors import CheckpointConflictError, CheckpointExistsError


class Echo(Executor):
    @handler
    async def echo(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(text)


def echo_workflow():
    return WorkflowBuilder(Echo(id="echo"), name="echo").build()


async def stored_heads(storage: CheckpointStorage, checkpoint_id: str) -> tuple[str | None, int]:
    loaded = await storage.load(checkpoint_id)
    return loaded.head_snapshot_id, len(loaded.snapshots)


async def test_creating_a_stored_id_again_is_refused_naming_the_id_and_both_ways_on(
    checkpoint_storage,
) -> None:
    workflow = echo_workflow()
    first = workflow.create_checkpoint(checkpoint_id="run-1", checkpoint_storage=checkpoint_storage)
    await workflow.run("first", checkpoint=first)
    before = await stored_heads(checkpoint_storage, "run-1")

    with pytest.raises(CheckpointExistsError) as caught:  # here, or at the first commit
        again = workflow.create_checkpoint(checkpoint_id="run-1",
                                           checkpoint_storage=checkpoint_storage)
        await workflow.run("second", checkpoint=again)

    message = str(caught.value)
    assert "'run-1' already exists" in message
    assert "storage.load('run-1')" in message and "another checkpoint_id" in message
    assert "another writer committed first" not in message
    assert caught.value.checkpoint_id == "run-1"
    assert isinstance(caught.value, CheckpointConflictError)  # old handlers still catch it
    assert await stored_heads(checkpoint_storage, "run-1") == before


async def test_a_storage_that_can_tell_at_once_refuses_the_id_where_it_is_chosen(
    checkpoint_storage,
) -> None:
    if not isinstance(checkpoint_storage, ExistenceCheck):
        pytest.skip("a remote storage refuses the id at the first commit (the test above)")
    workflow = echo_workflow()
    assert checkpoint_storage.checkpoint_exists("run-1") is False
    await workflow.run("first", checkpoint=workflow.create_checkpoint(
        checkpoint_id="run-1", checkpoint_storage=checkpoint_storage))
    assert checkpoint_storage.checkpoint_exists("run-1") is True

    with pytest.raises(CheckpointExistsError, match="'run-1' already exists"):
        workflow.create_checkpoint(checkpoint_id="run-1", checkpoint_storage=checkpoint_storage)

    await checkpoint_storage.delete("run-1")
    assert checkpoint_storage.checkpoint_exists("run-1") is False
    again = workflow.create_checkpoint(checkpoint_id="run-1", checkpoint_storage=checkpoint_storage)
    assert (await workflow.run("again", checkpoint=again)).get_outputs() == ["again"]


async def test_the_first_commit_over_a_stored_id_says_an_earlier_run_wrote_it(
    checkpoint_storage, make_state
) -> None:
    earlier = await Checkpoint("run-1", checkpoint_storage=checkpoint_storage).commit_snapshot(
        state=make_state(1), metadata={"boundary": "superstep_completed", "superstep": 3})
    with pytest.raises(CheckpointExistsError) as caught:
        await Checkpoint("run-1", checkpoint_storage=checkpoint_storage).commit_snapshot(
            state=make_state(2))

    message = str(caught.value)
    assert caught.value.actual_head_snapshot_id == earlier.snapshot_id
    assert f"head {earlier.snapshot_id!r}" in message
    assert f"written at {earlier.timestamp}" in message and "superstep 3" in message
    assert "by an earlier run of this checkpoint id" in message
    assert await stored_heads(checkpoint_storage, "run-1") == (earlier.snapshot_id, 1)


async def test_a_stale_object_is_told_what_the_storage_has_and_who_wrote_it(
    checkpoint_storage, make_state
) -> None:
    await Checkpoint("run-1", checkpoint_storage=checkpoint_storage).commit_snapshot(
        state=make_state(0))
    mover, stale = await checkpoint_storage.load("run-1"), await checkpoint_storage.load("run-1")
    await mover.commit_snapshot(state=make_state(1))
    winner = await mover.commit_snapshot(state=make_state(2), metadata={"superstep": 7})

    with pytest.raises(CheckpointConflictError) as caught:
        await stale.commit_snapshot(state=make_state(9))

    error = caught.value
    assert type(error) is CheckpointConflictError
    assert error.actual_head_snapshot_id == winner.snapshot_id
    assert (f"that head was written at {winner.timestamp} (superstep 7) by another writer "
            "while this object was in use, 2 commits past the head this object last saw"
            ) in str(error)
    assert await stored_heads(checkpoint_storage, "run-1") == (winner.snapshot_id, 3)


async def test_a_head_on_another_branch_is_said_to_be(checkpoint_storage, make_state) -> None:
    root = await Checkpoint("run-1", checkpoint_storage=checkpoint_storage).commit_snapshot(
        state=make_state(0))
    mover = await checkpoint_storage.load("run-1")
    await mover.commit_snapshot(state=make_state(1))
    stale = await checkpoint_storage.load("run-1")
    mover.restart_from(root.snapshot_id)
    await mover.commit_snapshot(state=make_state(2))

    with pytest.raises(CheckpointConflictError, match="on another branch than the head this "
                                                      "object last saw"):
        await stale.commit_snapshot(state=make_state(3))


async def test_a_commit_to_a_deleted_checkpoint_says_it_is_gone(
    checkpoint_storage, make_state
) -> None:
    checkpoint = Checkpoint("run-1", checkpoint_storage=checkpoint_storage)
    await checkpoint.commit_snapshot(state=make_state(0))
    await checkpoint_storage.delete("run-1")

    with pytest.raises(CheckpointConflictError, match="no longer in this storage") as caught:
        await checkpoint.commit_snapshot(state=make_state(1))
    assert caught.value.actual_head_snapshot_id is None
    assert await checkpoint_storage.list_checkpoint_ids() == []
