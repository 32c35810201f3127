"""One stateless Workflow, many runs: independence, no leftovers, and the in-use guard."""

from __future__ import annotations

import asyncio

import pytest
from engine_samples import build_factor, build_review, fingerprint

from checkflow.errors import CheckpointInUseError, WorkflowRunError
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage
from checkflow.workflows import (
    Executor,
    ExecutorInvokedEvent,
    RunStatus,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)


async def test_two_one_shot_runs_are_identical_and_independent():
    workflow = build_factor()
    first, second = await workflow.run(10), await workflow.run(10)
    assert first.checkpoint is not second.checkpoint
    assert first.checkpoint.checkpoint_id != second.checkpoint.checkpoint_id
    assert first.status is second.status is RunStatus.AWAITING_RESPONSES
    assert [type(e) for e in first.events] == [type(e) for e in second.events]
    # one-shot: the live state is encoded once, as the run pauses
    assert len(first.checkpoint.snapshots) == len(second.checkpoint.snapshots) == 1
    assert first.checkpoint.workflow_name == "factor"
    assert first.checkpoint.graph_signature_hash == workflow.graph_signature_hash
    one, two = first.checkpoint.head_snapshot.state, second.checkpoint.head_snapshot.state
    one["messages"]["pending"]["requests"] = two["messages"]["pending"]["requests"] = {}
    assert one == two
    (request_id,) = first.pending_requests
    answered = await workflow.run(responses={request_id: False}, checkpoint=first.checkpoint)
    assert answered.get_outputs() == ["dropped"]
    assert second.checkpoint.head_snapshot_id == second.checkpoint.snapshots[-1].snapshot_id
    assert len(second.checkpoint.snapshots) == 1  # one-shot: encoded once, as it paused


def _expected_supersteps(n: int) -> int:
    steps = 2  # start, then the worker's first step
    while n > 1:
        n //= 2
        steps += 1
    return steps


async def test_a_hundred_concurrent_runs_on_one_workflow_stay_apart(tmp_path):
    workflow = build_factor()
    memory, files = InMemoryCheckpointStorage(), FileCheckpointStorage(tmp_path / "cps")
    checkpoints = [
        workflow.create_checkpoint(
            checkpoint_id=f"run-{n}", checkpoint_storage=(memory, files, None)[n % 3]
        )
        for n in range(100)
    ]
    results = await asyncio.gather(
        *(workflow.run(n, checkpoint=cp) for n, cp in enumerate(checkpoints))
    )
    for n, (result, checkpoint) in enumerate(zip(results, checkpoints, strict=True)):
        assert result.status is RunStatus.AWAITING_RESPONSES
        assert len(checkpoint.snapshots) == 1 + _expected_supersteps(n), n
        assert checkpoint.head_snapshot.state["messages"]["input"][0]["data"] == n
    answers = await asyncio.gather(
        *(
            workflow.run(responses={next(iter(r.pending_requests)): n % 2 == 0}, checkpoint=cp)
            for n, (r, cp) in enumerate(zip(results, checkpoints, strict=True))
        )
    )
    assert [a.get_outputs() for a in answers] == [
        ["published" if n % 2 == 0 else "dropped"] for n in range(100)
    ]
    for n in range(1, 100, 3):
        loaded = await files.load(f"run-{n}")
        assert len(loaded.snapshots) == 1 + _expected_supersteps(n) + 2


async def test_many_runs_leave_the_workflow_object_graph_unchanged():
    workflow = build_review()
    before = fingerprint(workflow)
    results = await asyncio.gather(*(workflow.run(f"topic {n}") for n in range(20)))
    for result in results:
        await workflow.run(
            responses={"approve": {"approved": True, "reviewer": "ann"}},
            checkpoint=result.checkpoint,
        )
    stream = workflow.run("streamed", stream=True)
    async for _ in stream:
        pass
    factor = build_factor()
    factor_before = fingerprint(factor)
    await asyncio.gather(*(factor.run(n) for n in range(20)))
    assert fingerprint(workflow) == before
    assert fingerprint(factor) == factor_before


class Gate(Executor):
    """Waits at a barrier only all of a superstep's executors together can pass."""

    def __init__(self, id: str, barrier: asyncio.Barrier) -> None:
        super().__init__(id)
        self._barrier = barrier

    @handler
    async def meet(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        await asyncio.wait_for(self._barrier.wait(), timeout=10)
        await ctx.yield_output(n)


class Fan(Executor):
    @handler
    async def go(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n)


async def test_the_executors_of_one_superstep_run_concurrently():
    barrier = asyncio.Barrier(3)
    fan = Fan(id="fan")
    gates = [Gate(id=f"gate{i}", barrier=barrier) for i in range(3)]
    workflow = WorkflowBuilder(start_executor=fan).add_fan_out_edges(fan, gates).build()
    result = await workflow.run(1)
    assert result.get_outputs() == [1, 1, 1]


class Serial(Executor):
    @handler
    async def take(self, n: int, ctx: WorkflowContext[int, list[int]]) -> None:
        log = ctx.executor_state.setdefault("log", [])
        log.append(("in", n))
        await asyncio.sleep(0)  # yield: a concurrent delivery would interleave here
        log.append(("out", n))
        if len(log) == 6:
            await ctx.yield_output([entry[1] for entry in log])


class Burst(Executor):
    @handler
    async def go(self, n: int, ctx: WorkflowContext[int]) -> None:
        for i in range(3):
            await ctx.send_message(n + i)


async def test_deliveries_to_one_executor_are_serialized_in_send_order():
    burst, serial = Burst(id="burst"), Serial(id="serial")
    workflow = WorkflowBuilder(start_executor=burst).add_edge(burst, serial).build()
    result = await workflow.run(10)
    assert result.get_outputs() == [[10, 10, 11, 11, 12, 12]]
    invoked = [e for e in result.events if isinstance(e, ExecutorInvokedEvent)]
    assert [e.executor_id for e in invoked] == ["burst", "serial"]


class Parked(Executor):
    """Holds the run open until the test lets it go."""

    def __init__(self, id: str, entered: asyncio.Event, release: asyncio.Event) -> None:
        super().__init__(id)
        self._entered, self._release = entered, release

    @handler
    async def wait(self, n: int, ctx: WorkflowContext) -> None:
        self._entered.set()
        await asyncio.wait_for(self._release.wait(), timeout=10)


async def _held_run(storage):
    entered, release = asyncio.Event(), asyncio.Event()
    workflow = WorkflowBuilder(
        start_executor=Parked(id="p", entered=entered, release=release)
    ).build()
    checkpoint = workflow.create_checkpoint(checkpoint_id="busy", checkpoint_storage=storage)
    running = asyncio.ensure_future(workflow.run(1, checkpoint=checkpoint))
    await asyncio.wait_for(entered.wait(), timeout=10)
    return workflow, checkpoint, running, release


async def test_a_second_run_on_a_busy_checkpoint_is_refused_at_once():
    workflow, checkpoint, running, release = await _held_run(None)
    with pytest.raises(CheckpointInUseError, match="'busy'"):
        await workflow.run(2, checkpoint=checkpoint)
    release.set()
    assert (await running).status is RunStatus.IDLE
    assert (await workflow.run(2, checkpoint=checkpoint)).status is RunStatus.IDLE


async def test_restart_from_on_a_busy_checkpoint_is_refused():
    _, checkpoint, running, release = await _held_run(None)
    entry = checkpoint.snapshots[0]
    with pytest.raises(CheckpointInUseError):
        checkpoint.restart_from(entry.snapshot_id)
    release.set()
    await running
    checkpoint.restart_from(entry.snapshot_id)


async def test_a_manual_commit_on_a_busy_checkpoint_is_refused():
    _, checkpoint, running, release = await _held_run(None)
    state = checkpoint.snapshots[0].state
    with pytest.raises(CheckpointInUseError):
        await checkpoint.commit_snapshot(state=state, metadata={"boundary": "manual"})
    release.set()
    await running


async def test_a_second_object_loaded_from_the_same_storage_is_refused_too(tmp_path):
    storage = FileCheckpointStorage(tmp_path)
    workflow, checkpoint, running, release = await _held_run(storage)
    twin = await storage.load("busy")
    assert twin is not checkpoint
    with pytest.raises(CheckpointInUseError):
        await workflow.run(3, checkpoint=twin)
    release.set()
    await running


async def test_a_failed_run_releases_the_guard():
    class Once(Executor):
        @handler
        async def go(self, n: int, ctx: WorkflowContext) -> None:
            if n == 1:
                raise ValueError("bad input")

    workflow = WorkflowBuilder(start_executor=Once(id="once")).build()
    checkpoint = workflow.create_checkpoint()
    with pytest.raises(WorkflowRunError):
        await workflow.run(1, checkpoint=checkpoint)
    with pytest.raises(WorkflowRunError):  # not CheckpointInUseError: the guard is free
        await workflow.run(checkpoint=checkpoint)  # the head still holds the bad delivery
    checkpoint.restart_from(checkpoint.snapshots[0].snapshot_id)
