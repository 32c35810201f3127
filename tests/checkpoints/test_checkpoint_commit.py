"""commit_snapshot against a storage: two heads, conflicts, ordering, failures, cancellation."""

from __future__ import annotations

import asyncio

import pytest

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.errors import CheckpointConflictError, CheckpointError, CommitOutcomeUnknownError
from checkflow.storage import InMemoryCheckpointStorage


class FailingStorage(InMemoryCheckpointStorage):
    """Raises the given error from every commit after ``healthy`` successful ones."""

    def __init__(self, error: BaseException, healthy: int = 0) -> None:
        super().__init__()
        self.error, self.healthy = error, healthy

    async def commit_snapshot(
        self, checkpoint: Checkpoint, snapshot: CheckpointSnapshot, *, expected_head_snapshot_id
    ) -> None:
        if self.healthy == 0:
            raise self.error
        self.healthy -= 1
        await super().commit_snapshot(
            checkpoint, snapshot, expected_head_snapshot_id=expected_head_snapshot_id
        )


class GatedStorage(InMemoryCheckpointStorage):
    """Holds every commit at a gate so a test can act while the storage call is in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.gate, self.finished = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self.expected_heads: list[str | None] = []

    async def commit_snapshot(
        self, checkpoint: Checkpoint, snapshot: CheckpointSnapshot, *, expected_head_snapshot_id
    ) -> None:
        self.expected_heads.append(expected_head_snapshot_id)
        self.entered.set()
        await asyncio.wait_for(self.gate.wait(), timeout=10)
        await super().commit_snapshot(
            checkpoint, snapshot, expected_head_snapshot_id=expected_head_snapshot_id
        )
        self.finished.set()


async def test_commit_after_restart_from_expects_the_persisted_head_not_the_working_one(
    make_state,
) -> None:
    storage = InMemoryCheckpointStorage()
    checkpoint = Checkpoint("run-1", checkpoint_storage=storage)
    first = await checkpoint.commit_snapshot(state=make_state(1))
    await checkpoint.commit_snapshot(state=make_state(2))
    checkpoint.restart_from(first.snapshot_id)
    branch = await checkpoint.commit_snapshot(state=make_state(3))  # not a conflict
    assert branch.parent_snapshot_id == first.snapshot_id
    assert (await storage.load("run-1")).head_snapshot_id == branch.snapshot_id


async def test_a_stale_second_object_gets_a_conflict_naming_both_heads(make_state) -> None:
    storage = InMemoryCheckpointStorage()
    await Checkpoint("run-1", checkpoint_storage=storage).commit_snapshot(state=make_state(0))
    first, second = await storage.load("run-1"), await storage.load("run-1")
    stale_head = second.head_snapshot_id
    winner = await first.commit_snapshot(state=make_state(1))
    with pytest.raises(CheckpointConflictError) as caught:
        await second.commit_snapshot(state=make_state(2))
    assert caught.value.expected_head_snapshot_id == stale_head
    assert caught.value.actual_head_snapshot_id == winner.snapshot_id
    assert winner.snapshot_id in str(caught.value) and str(stale_head) in str(caught.value)
    assert second.head_snapshot_id == stale_head and len(second.snapshots) == 1


async def test_refresh_after_a_conflict_lets_the_next_commit_succeed(make_state) -> None:
    storage = InMemoryCheckpointStorage()
    await Checkpoint("run-1", checkpoint_storage=storage).commit_snapshot(state=make_state(0))
    first, second = await storage.load("run-1"), await storage.load("run-1")
    winner = await first.commit_snapshot(state=make_state(1))
    with pytest.raises(CheckpointConflictError):
        await second.commit_snapshot(state=make_state(2))
    await second.refresh()
    assert second.head_snapshot_id == winner.snapshot_id
    retried = await second.commit_snapshot(state=make_state(2))
    assert retried.parent_snapshot_id == winner.snapshot_id
    assert (await storage.load("run-1")).head_snapshot_id == retried.snapshot_id


async def test_refresh_without_storage_raises_a_checkpoint_error() -> None:
    with pytest.raises(CheckpointError, match="no storage"):
        await Checkpoint("run-1").refresh()


async def test_concurrent_commits_are_ordered_into_one_chain(make_state) -> None:
    checkpoint = Checkpoint("run-1", checkpoint_storage=InMemoryCheckpointStorage())
    snapshots = await asyncio.gather(
        *(checkpoint.commit_snapshot(state=make_state(i)) for i in range(10))
    )
    parents = [s.parent_snapshot_id for s in snapshots]
    assert parents == [None] + [s.snapshot_id for s in snapshots[:-1]]
    assert checkpoint.head_snapshot_id == snapshots[-1].snapshot_id


async def test_a_storage_error_propagates_as_itself_and_changes_nothing(make_state) -> None:
    storage = FailingStorage(OSError(28, "No space left on device"), healthy=1)
    checkpoint = Checkpoint("run-1", checkpoint_storage=storage)
    first = await checkpoint.commit_snapshot(state=make_state(1))
    with pytest.raises(OSError, match="No space left"):
        await checkpoint.commit_snapshot(state=make_state(2))
    assert checkpoint.snapshots == [first]
    assert checkpoint.head_snapshot_id == checkpoint.persisted_head_snapshot_id
    assert (
        (await storage.load("run-1")).head_snapshot_id
        == first.snapshot_id
        == (checkpoint.head_snapshot_id)
    )


async def start_in_flight(checkpoint: Checkpoint, storage: GatedStorage, state) -> asyncio.Task:
    """Start a commit and return once its storage call is held at the gate."""
    commit = asyncio.create_task(checkpoint.commit_snapshot(state=state))
    await asyncio.wait_for(storage.entered.wait(), timeout=10)
    return commit


async def cancel_in_flight(checkpoint: Checkpoint, storage: GatedStorage, state) -> None:
    """Start a commit, cancel its caller while the storage call is held at the gate."""
    commit = await start_in_flight(checkpoint, storage, state)
    commit.cancel()
    with pytest.raises(asyncio.CancelledError):
        await commit


async def test_a_commit_after_a_cancelled_one_waits_for_it_and_does_not_conflict(
    make_state,
) -> None:
    storage = GatedStorage()
    checkpoint = Checkpoint("run-1", checkpoint_storage=storage)
    await cancel_in_flight(checkpoint, storage, make_state(1))
    following = asyncio.create_task(checkpoint.commit_snapshot(state=make_state(2)))
    storage.gate.set()
    second = await following
    first_id = storage.expected_heads[1]
    assert second.parent_snapshot_id == first_id is not None
    assert (await storage.load("run-1")).head_snapshot_id == second.snapshot_id


async def test_a_cancelled_commit_that_fails_in_storage_leaves_everything_unchanged(
    make_state,
) -> None:
    class GatedFailing(GatedStorage):
        async def commit_snapshot(self, checkpoint, snapshot, *, expected_head_snapshot_id):
            self.entered.set()
            await asyncio.wait_for(self.gate.wait(), timeout=10)
            self.finished.set()
            raise ConnectionResetError("storage went away")

    storage = GatedFailing()
    checkpoint = Checkpoint("run-1", checkpoint_storage=storage)
    await cancel_in_flight(checkpoint, storage, make_state(1))
    storage.gate.set()
    await asyncio.wait_for(storage.finished.wait(), timeout=10)
    assert checkpoint.snapshots == [] and checkpoint.head_snapshot_id is None
    assert await storage.list_checkpoint_ids() == []


@pytest.fixture
async def gated(make_state) -> tuple[GatedStorage, Checkpoint, CheckpointSnapshot]:
    """A checkpoint on a gated storage with one snapshot committed and the gate closed again."""
    storage = GatedStorage()
    checkpoint = Checkpoint("run-1", checkpoint_storage=storage)
    storage.gate.set()
    first = await checkpoint.commit_snapshot(state=make_state(1))
    for event in (storage.entered, storage.gate, storage.finished):
        event.clear()
    return storage, checkpoint, first


async def test_restart_from_during_an_in_flight_commit_keeps_the_callers_head(
    gated, make_state
) -> None:
    storage, checkpoint, first = gated
    in_flight = await start_in_flight(checkpoint, storage, make_state(2))
    checkpoint.restart_from(first.snapshot_id)
    storage.gate.set()
    landed = await in_flight
    assert checkpoint.head_snapshot_id == first.snapshot_id  # the caller's choice wins
    assert checkpoint.persisted_head_snapshot_id == landed.snapshot_id
    assert checkpoint.get_snapshot(landed.snapshot_id) == landed
    branch = await checkpoint.commit_snapshot(state=make_state(3))
    assert branch.parent_snapshot_id == first.snapshot_id
    assert [s.snapshot_id for s in checkpoint.tips()] == [landed.snapshot_id, branch.snapshot_id]
    assert (await storage.load("run-1")).head_snapshot_id == branch.snapshot_id


async def test_a_commit_queued_behind_an_in_flight_one_attaches_to_the_restart_target(
    gated, make_state
) -> None:
    storage, checkpoint, first = gated
    in_flight = await start_in_flight(checkpoint, storage, make_state(2))
    queued = asyncio.create_task(checkpoint.commit_snapshot(state=make_state(3)))
    await asyncio.sleep(0)  # let it reach the commit lock (ordering only; no overlap needed)
    checkpoint.restart_from(first.snapshot_id)
    storage.gate.set()
    await in_flight
    assert (await queued).parent_snapshot_id == first.snapshot_id
    assert checkpoint.head_snapshot_id == checkpoint.persisted_head_snapshot_id


async def test_restart_from_during_a_cancelled_in_flight_commit_keeps_the_callers_head(
    gated, make_state
) -> None:
    storage, checkpoint, first = gated
    await cancel_in_flight(checkpoint, storage, make_state(2))
    checkpoint.restart_from(first.snapshot_id)
    storage.gate.set()
    # the shielded task records it before this wakes
    await asyncio.wait_for(storage.finished.wait(), timeout=10)
    assert checkpoint.head_snapshot_id == first.snapshot_id
    assert checkpoint.persisted_head_snapshot_id == (await storage.load("run-1")).head_snapshot_id
    assert len(checkpoint.snapshots) == 2


class LostReplyStorage(InMemoryCheckpointStorage):
    """Lands every commit, then loses the reply: the storage cannot tell whether it landed."""

    async def commit_snapshot(
        self, checkpoint: Checkpoint, snapshot: CheckpointSnapshot, *, expected_head_snapshot_id
    ) -> None:
        await super().commit_snapshot(
            checkpoint, snapshot, expected_head_snapshot_id=expected_head_snapshot_id
        )
        raise CommitOutcomeUnknownError(checkpoint.checkpoint_id, snapshot.snapshot_id, "timeout")


async def test_an_unknown_commit_outcome_changes_nothing_and_refresh_finds_what_landed(
    make_state,
) -> None:
    storage = LostReplyStorage()
    checkpoint = Checkpoint("run-1", checkpoint_storage=storage)
    with pytest.raises(CommitOutcomeUnknownError, match="refresh") as caught:
        await checkpoint.commit_snapshot(state=make_state(1))
    assert checkpoint.snapshots == [] and checkpoint.head_snapshot_id is None
    await checkpoint.refresh()
    assert checkpoint.head_snapshot_id == caught.value.snapshot_id
    assert checkpoint.head_snapshot is not None
    assert checkpoint.head_snapshot.state == make_state(1)
