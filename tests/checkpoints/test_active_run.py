"""The active-run guard: one run per checkpoint; its own tasks may commit, nobody else may."""

from __future__ import annotations

import asyncio

import pytest

from checkflow.checkpoints import Checkpoint, active_run
from checkflow.errors import CheckpointInUseError
from checkflow.storage import InMemoryCheckpointStorage


async def test_a_second_active_run_on_the_same_checkpoint_is_refused() -> None:
    checkpoint = Checkpoint("run-1")
    refused = pytest.raises(CheckpointInUseError, match="run-1")
    with active_run(checkpoint), refused, active_run(checkpoint):
        pass


async def test_the_guard_is_free_again_after_the_run_ends() -> None:
    checkpoint = Checkpoint("run-1")
    with active_run(checkpoint):
        pass
    with active_run(checkpoint):
        pass


async def test_the_guard_is_released_when_the_run_raises() -> None:
    checkpoint = Checkpoint("run-1")
    with pytest.raises(RuntimeError), active_run(checkpoint):
        raise RuntimeError("executor failed")
    with active_run(checkpoint):
        pass


async def test_the_run_itself_and_its_child_tasks_may_commit(make_state) -> None:
    checkpoint = Checkpoint("run-1")
    with active_run(checkpoint):
        await checkpoint.commit_snapshot(state=make_state(1))
        child = asyncio.create_task(checkpoint.commit_snapshot(state=make_state(2)))
        await child
    assert len(checkpoint.snapshots) == 2


async def test_a_commit_from_another_task_during_a_run_is_refused(make_state) -> None:
    checkpoint = Checkpoint("run-1")
    outsider_may_try, run_may_end = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        with active_run(checkpoint):
            outsider_may_try.set()
            await asyncio.wait_for(run_may_end.wait(), timeout=10)

    running = asyncio.create_task(run())  # a task that is NOT a child of the run
    await asyncio.wait_for(outsider_may_try.wait(), timeout=10)
    with pytest.raises(CheckpointInUseError):
        await checkpoint.commit_snapshot(state=make_state(1))
    run_may_end.set()
    await running
    assert checkpoint.snapshots == []


async def test_restart_from_during_a_run_is_refused(make_state) -> None:
    checkpoint = Checkpoint("run-1")
    first = await checkpoint.commit_snapshot(state=make_state(1))
    await checkpoint.commit_snapshot(state=make_state(2))
    entered, leave = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        with active_run(checkpoint):
            entered.set()
            await asyncio.wait_for(leave.wait(), timeout=10)

    running = asyncio.create_task(run())
    await asyncio.wait_for(entered.wait(), timeout=10)
    with pytest.raises(CheckpointInUseError):
        checkpoint.restart_from(first.snapshot_id)
    leave.set()
    await running
    checkpoint.restart_from(first.snapshot_id)  # allowed once the run ended


async def test_a_task_the_run_spawned_loses_its_right_once_another_run_holds_the_guard(
    make_state,
) -> None:
    checkpoint = Checkpoint("run-1")
    leftover_ready, leftover_try, leftover_done = asyncio.Event(), asyncio.Event(), asyncio.Event()
    outcome: list[BaseException] = []

    async def leftover() -> None:
        leftover_ready.set()
        await asyncio.wait_for(leftover_try.wait(), timeout=10)
        try:
            await checkpoint.commit_snapshot(state=make_state(9))
        except CheckpointInUseError as exc:
            outcome.append(exc)
        leftover_done.set()

    with active_run(checkpoint):
        spawned = asyncio.create_task(leftover())
        await asyncio.wait_for(leftover_ready.wait(), timeout=10)

    async def second_run() -> None:
        with active_run(checkpoint):
            leftover_try.set()
            await asyncio.wait_for(leftover_done.wait(), timeout=10)

    await asyncio.gather(second_run(), spawned)
    assert len(outcome) == 1


async def test_two_objects_loaded_from_one_storage_share_the_guard(make_state) -> None:
    storage = InMemoryCheckpointStorage()
    await Checkpoint("run-1", checkpoint_storage=storage).commit_snapshot(state=make_state())
    first, second = await storage.load("run-1"), await storage.load("run-1")
    with active_run(first), pytest.raises(CheckpointInUseError), active_run(second):
        pass


async def test_unattached_checkpoints_with_the_same_id_do_not_share_the_guard() -> None:
    with active_run(Checkpoint("run-1")), active_run(Checkpoint("run-1")):
        pass
