"""Snapshots at exactly two boundaries, lineage, branching, failure and convergence."""

from __future__ import annotations

from typing import Any

import pytest

from checkflow.errors import CheckpointConflictError, WorkflowConvergenceError, WorkflowRunError
from checkflow.storage import InMemoryCheckpointStorage
from checkflow.workflows import (
    Executor,
    RunStatus,
    SnapshotCommittedEvent,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


class Add(Executor):
    def __init__(self, id: str, amount: int) -> None:
        super().__init__(id)
        self._amount = amount

    @handler
    async def add(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        ctx.executor_state["calls"] = ctx.executor_state.get("calls", 0) + 1
        await ctx.send_message(n + self._amount)


class Emit(Executor):
    @handler
    async def emit(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        await ctx.yield_output(n)


def chain():
    a, b, c = Add(id="a", amount=1), Add(id="b", amount=10), Emit(id="c")
    return WorkflowBuilder(start_executor=a).add_chain([a, b, c]).build()


async def test_a_three_step_chain_commits_an_entry_and_one_snapshot_per_superstep(storage):
    workflow = chain()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    result = await workflow.run(5, checkpoint=checkpoint)
    assert result.get_outputs() == [16]
    snapshots = checkpoint.snapshots
    assert [s.metadata["boundary"] for s in snapshots] == ["input_accepted"] + [
        "superstep_completed"
    ] * 3
    assert [s.metadata["superstep"] for s in snapshots] == [0, 1, 2, 3]
    assert [s.parent_snapshot_id for s in snapshots] == [None] + [
        s.snapshot_id for s in snapshots[:-1]
    ]
    assert checkpoint.head_snapshot_id == snapshots[-1].snapshot_id
    assert snapshots[-1].metadata["status"] == "idle"
    assert snapshots[-1].state["workflow_state"]["status"] == "idle"
    assert [s.metadata["status"] for s in snapshots[:-1]] == ["running"] * 3
    committed = [e.snapshot_id for e in result.events if isinstance(e, SnapshotCommittedEvent)]
    assert committed == [s.snapshot_id for s in snapshots]
    loaded = await storage.load(checkpoint.checkpoint_id)
    assert [s.snapshot_id for s in loaded.snapshots] == committed


async def test_every_snapshot_holds_exactly_the_four_buckets():
    result = await chain().run(5)
    for snapshot in result.checkpoint.snapshots:
        state = snapshot.state
        assert list(state) == ["workflow_state", "executor_states", "edge_states", "messages"]
        assert set(state["messages"]) == {"input", "pending", "output"}


async def test_the_entry_snapshot_holds_the_input_and_restoring_from_it_reproduces_outputs():
    workflow = chain()
    first = await workflow.run(5, checkpoint=workflow.create_checkpoint())
    checkpoint = first.checkpoint
    entry = checkpoint.snapshots[0]
    assert entry.state["messages"]["input"] == [{"kind": "message", "data": 5}]
    assert entry.state["messages"]["pending"]["messages"][0]["target"] == "a"
    checkpoint.restart_from(entry.snapshot_id)
    again = await workflow.run(checkpoint=checkpoint)
    assert again.get_outputs() == first.get_outputs() == [16]


async def test_restarting_from_a_snapshot_branches_and_keeps_the_old_branch(storage):
    workflow = chain()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    await workflow.run(5, checkpoint=checkpoint)
    old = checkpoint.snapshots
    k = old[1]  # after superstep 1: "b" has a pending 6
    checkpoint.restart_from(k.snapshot_id)
    result = await workflow.run(checkpoint=checkpoint)
    assert result.get_outputs() == [16]
    new = [s for s in checkpoint.snapshots if s.snapshot_id not in {o.snapshot_id for o in old}]
    assert len(new) == 2
    assert new[0].parent_snapshot_id == k.snapshot_id
    assert [s.metadata["superstep"] for s in new] == [2, 3]
    loaded = await storage.load(checkpoint.checkpoint_id)
    assert {s.snapshot_id for s in old} <= {s.snapshot_id for s in loaded.snapshots}
    assert loaded.head_snapshot_id == new[-1].snapshot_id
    assert sorted(t.snapshot_id for t in loaded.tips()) == sorted(
        [old[-1].snapshot_id, new[-1].snapshot_id]
    )
    assert loaded.head_snapshot.state["executor_states"]["b"]["calls"] == 1


async def test_the_superstep_counter_runs_on_along_the_lineage():
    workflow = chain()
    first = await workflow.run(1)
    second = await workflow.run(2, checkpoint=first.checkpoint)
    assert second.get_outputs() == [13]
    # the one-shot first run kept only its final snapshot; the second one, given the
    # checkpoint, commits at every boundary
    assert [s.metadata["superstep"] for s in first.checkpoint.snapshots] == [3, 3, 4, 5, 6]
    assert first.checkpoint.head_snapshot.state["messages"]["output"] == [12, 13]


class Boom(Executor):
    @handler
    async def boom(self, n: int, ctx: WorkflowContext[int]) -> None:
        raise LookupError(f"no such thing as {n}")


async def test_a_failing_executor_ends_failed_and_commits_nothing_more(storage):
    a, boom = Add(id="a", amount=1), Boom(id="boom")
    workflow = WorkflowBuilder(start_executor=a).add_edge(a, boom).build()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    with pytest.raises(WorkflowRunError) as caught:
        await workflow.run(1, checkpoint=checkpoint)
    error = caught.value
    assert isinstance(error.__cause__, LookupError)
    assert error.executor_id == "boom"
    assert "executor 'boom' failed: LookupError: no such thing as 2" in str(error)
    assert error.result.status is RunStatus.FAILED
    assert error.result.checkpoint is checkpoint
    assert [s.metadata["superstep"] for s in checkpoint.snapshots] == [0, 1]
    loaded = await storage.load(checkpoint.checkpoint_id)
    assert loaded.head_snapshot_id == checkpoint.snapshots[-1].snapshot_id


class FailingStorage(InMemoryCheckpointStorage):
    """A real in-memory storage whose disk 'fills up' after a number of commits."""

    def __init__(self, fail_after: int) -> None:
        super().__init__()
        self.left = fail_after

    async def commit_snapshot(self, checkpoint: Any, snapshot: Any, **kw: Any) -> None:
        if self.left == 0:
            raise OSError(28, "No space left on device")
        self.left -= 1
        await super().commit_snapshot(checkpoint, snapshot, **kw)


async def test_a_storage_failure_mid_run_surfaces_and_leaves_the_head_unchanged():
    storage = FailingStorage(fail_after=2)
    workflow = chain()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    with pytest.raises(OSError, match="No space left"):
        await workflow.run(5, checkpoint=checkpoint)
    assert len(checkpoint.snapshots) == 2
    assert checkpoint.head_snapshot_id == checkpoint.snapshots[1].snapshot_id
    loaded = await storage.load(checkpoint.checkpoint_id)
    assert loaded.head_snapshot_id == checkpoint.head_snapshot_id
    storage.left = 10
    result = await workflow.run(checkpoint=checkpoint)  # resumes from the durable head
    assert result.get_outputs() == [16]


async def test_a_stale_checkpoint_object_conflicts_in_storage_and_commits_nothing(storage):
    workflow = chain()
    first = workflow.create_checkpoint(checkpoint_id="shared", checkpoint_storage=storage)
    await workflow.run(1, checkpoint=first)
    stale = await storage.load("shared")
    await workflow.run(2, checkpoint=first)  # moves the stored head past what ``stale`` holds
    head = stale.head_snapshot_id

    with pytest.raises(CheckpointConflictError):
        await workflow.run(3, checkpoint=stale)

    assert stale.head_snapshot_id == head
    assert (await storage.load("shared")).head_snapshot_id == first.head_snapshot_id


class Forever(Executor):
    @handler
    async def loop(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n + 1)


async def test_max_iterations_bounds_one_call_and_a_resumed_call_counts_afresh():
    forever = Forever(id="forever")
    workflow = (
        WorkflowBuilder(start_executor=forever, max_iterations=3).add_edge(forever, forever).build()
    )
    with pytest.raises(WorkflowConvergenceError, match="max_iterations=3") as caught:
        await workflow.run(0)
    checkpoint = caught.value.result.checkpoint  # one-shot: encoded once, as it stopped
    assert [s.metadata["superstep"] for s in checkpoint.snapshots] == [3]
    with pytest.raises(WorkflowConvergenceError):
        await workflow.run(checkpoint=checkpoint)
    assert checkpoint.head_snapshot.metadata["superstep"] == 6
    assert checkpoint.head_snapshot.state["messages"]["pending"]["messages"][0]["data"] == 6


class Writer(Executor):
    @handler
    async def write(self, n: int, ctx: WorkflowContext[int]) -> None:
        ctx.set_state("total", n)
        assert ctx.get_state("total") == n  # a handler reads its own write
        await ctx.send_message(n)


class Reader(Executor):
    @handler
    async def read(self, n: int, ctx: WorkflowContext[int, Any]) -> None:
        await ctx.yield_output(ctx.get_state("total", "unset"))


async def test_shared_state_set_in_one_superstep_is_visible_from_the_next():
    writer, reader, early = Writer(id="writer"), Reader(id="reader"), Reader(id="early")
    start = Add(id="start", amount=0)
    workflow = (
        WorkflowBuilder(start_executor=start)
        .add_fan_out_edges(start, [writer, early])
        .add_edge(writer, reader)
        .build()
    )
    result = await workflow.run(7)
    assert result.get_outputs() == ["unset", 7]  # "early" ran beside the writer
    assert result.checkpoint.head_snapshot.state["workflow_state"]["shared_state"] == {"total": 7}


class Based(Executor):
    """Sets shared state, pauses, and reads it back in the run that answers."""

    @handler
    async def start(self, n: int, ctx: WorkflowContext) -> None:
        ctx.set_state("base", n)
        await ctx.request_info({"add": "how much?"}, response_type=int)

    @response_handler
    async def on_amount(self, request: dict, amount: int, ctx: WorkflowContext[Any, int]) -> None:
        await ctx.yield_output(ctx.get_state("base") + amount)


@pytest.mark.parametrize("resumed_on", ["the same object", "a reloaded checkpoint"])
async def test_shared_state_survives_a_pause_and_resume(storage, resumed_on):
    workflow = WorkflowBuilder(start_executor=Based(id="based")).build()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    paused = await workflow.run(40, checkpoint=checkpoint)
    (request_id,) = paused.pending_requests
    if resumed_on == "a reloaded checkpoint":
        checkpoint = await storage.load(checkpoint.checkpoint_id)
    answered = await workflow.run(responses={request_id: 2}, checkpoint=checkpoint)
    assert answered.get_outputs() == [42]
