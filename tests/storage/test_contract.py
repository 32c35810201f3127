"""The CheckpointStorage contract, run against every backend in conftest.BACKENDS.

Backend-independent behaviour only: what a caller of any storage may rely on.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from checkflow.checkpoints import Checkpoint, CheckpointStorage, active_run
from checkflow.errors import (
    CheckpointConflictError,
    CheckpointInUseError,
    CheckpointNotFoundError,
    SnapshotNotFoundError,
)

ODD_IDS = ["../x", "a/b", "CON", "x" * 300, "", " spaced out ", "ünïcødé/☃", "..", "a\\b\x00c"]


async def branched(storage: CheckpointStorage, make_state, checkpoint_id: str = "run-1"):
    """Three commits, restart_from(first), one more commit: returns (checkpoint, snapshots)."""
    checkpoint = Checkpoint(checkpoint_id, workflow_name="wf", checkpoint_storage=storage)
    first = await checkpoint.commit_snapshot(state=make_state(1))
    second = await checkpoint.commit_snapshot(state=make_state(2))
    third = await checkpoint.commit_snapshot(state=make_state(3))
    checkpoint.restart_from(first.snapshot_id)
    fourth = await checkpoint.commit_snapshot(state=make_state(4))
    return checkpoint, [first, second, third, fourth]


class GatedStorage:
    """Wraps any backend; holds each commit at a gate before handing it to the backend."""

    def __init__(self, inner: CheckpointStorage) -> None:
        self.inner, self.format = inner, inner.format
        self.entered, self.gate, self.finished = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def commit_snapshot(self, checkpoint, snapshot, *, expected_head_snapshot_id) -> None:
        self.entered.set()
        await asyncio.wait_for(self.gate.wait(), timeout=10)
        await self.inner.commit_snapshot(
            checkpoint, snapshot, expected_head_snapshot_id=expected_head_snapshot_id
        )
        self.finished.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def loaded_twice(storage: CheckpointStorage, make_state) -> tuple[Checkpoint, Checkpoint]:
    """One commit, then two independent objects loaded from the storage (two writers)."""
    await Checkpoint("run-1", checkpoint_storage=storage).commit_snapshot(state=make_state(0))
    return await storage.load("run-1"), await storage.load("run-1")


async def test_load_returns_what_was_committed_attached_to_the_storage(
    checkpoint_storage, make_state
) -> None:
    checkpoint = Checkpoint(
        "run-1",
        workflow_name="wf",
        graph_signature_hash="sig",
        checkpoint_storage=checkpoint_storage,
    )
    snapshot = await checkpoint.commit_snapshot(
        state=make_state(1, pair=(1, 2)), metadata={"boundary": "input_accepted"}
    )
    loaded = await checkpoint_storage.load("run-1")
    assert loaded.checkpoint_storage is checkpoint_storage
    assert (loaded.workflow_name, loaded.graph_signature_hash) == ("wf", "sig")
    assert loaded.head_snapshot_id == snapshot.snapshot_id
    assert loaded.head_snapshot.state == make_state(1, pair=(1, 2))
    assert loaded.head_snapshot.metadata == {"boundary": "input_accepted"}
    assert loaded.head_snapshot.timestamp == snapshot.timestamp


async def test_a_loaded_checkpoint_keeps_persisting_its_commits(
    open_checkpoint_storage, make_state
) -> None:
    storage = open_checkpoint_storage()
    await Checkpoint("run-1", checkpoint_storage=storage).commit_snapshot(state=make_state(1))
    loaded = await storage.load("run-1")
    later = await loaded.commit_snapshot(state=make_state(2))
    reopened = await open_checkpoint_storage().load("run-1")
    assert reopened.head_snapshot_id == later.snapshot_id


async def test_branches_and_head_survive_a_reload(open_checkpoint_storage, make_state) -> None:
    checkpoint, (first, second, third, fourth) = await branched(
        open_checkpoint_storage(), make_state
    )
    loaded = await open_checkpoint_storage().load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots] == [
        s.snapshot_id for s in (first, second, third, fourth)
    ]
    assert loaded.get_snapshot(fourth.snapshot_id).parent_snapshot_id == first.snapshot_id
    assert loaded.head_snapshot_id == fourth.snapshot_id
    assert {s.snapshot_id for s in loaded.tips()} == {third.snapshot_id, fourth.snapshot_id}
    assert [s.state for s in loaded.snapshots] == [s.state for s in checkpoint.snapshots]


async def test_commit_with_a_stale_expected_head_raises_conflict_and_persists_nothing(
    checkpoint_storage, make_state
) -> None:
    first, second = await loaded_twice(checkpoint_storage, make_state)
    stale = second.head_snapshot_id
    winner = await first.commit_snapshot(state=make_state(1))
    with pytest.raises(CheckpointConflictError) as caught:
        await second.commit_snapshot(state=make_state(2))
    assert (caught.value.expected_head_snapshot_id, caught.value.actual_head_snapshot_id) == (
        stale,
        winner.snapshot_id,
    )
    stored = await checkpoint_storage.load("run-1")
    assert stored.head_snapshot_id == winner.snapshot_id
    assert len(stored.snapshots) == 2


async def test_refresh_then_commit_succeeds_after_a_conflict(
    checkpoint_storage, make_state
) -> None:
    first, second = await loaded_twice(checkpoint_storage, make_state)
    winner = await first.commit_snapshot(state=make_state(1))
    with pytest.raises(CheckpointConflictError):
        await second.commit_snapshot(state=make_state(2))
    await second.refresh()
    retried = await second.commit_snapshot(state=make_state(2))
    assert retried.parent_snapshot_id == winner.snapshot_id
    assert (await checkpoint_storage.load("run-1")).head_snapshot_id == retried.snapshot_id


async def test_creating_an_existing_checkpoint_again_is_a_conflict(
    checkpoint_storage, make_state
) -> None:
    await Checkpoint("run-1", checkpoint_storage=checkpoint_storage).commit_snapshot(
        state=make_state(0)
    )
    with pytest.raises(CheckpointConflictError) as caught:
        await Checkpoint("run-1", checkpoint_storage=checkpoint_storage).commit_snapshot(
            state=make_state(0)
        )
    assert caught.value.expected_head_snapshot_id is None


async def test_load_of_an_unknown_id_raises_checkpoint_not_found(checkpoint_storage) -> None:
    with pytest.raises(CheckpointNotFoundError, match="never-saved"):
        await checkpoint_storage.load("never-saved")


async def test_delete_removes_the_checkpoint(checkpoint_storage, make_state) -> None:
    await branched(checkpoint_storage, make_state)
    await checkpoint_storage.delete("run-1")
    with pytest.raises(CheckpointNotFoundError):
        await checkpoint_storage.load("run-1")
    assert await checkpoint_storage.list_checkpoint_ids() == []


async def test_delete_of_an_unknown_id_raises_checkpoint_not_found(checkpoint_storage) -> None:
    with pytest.raises(CheckpointNotFoundError):
        await checkpoint_storage.delete("never-saved")


async def test_a_checkpoint_can_be_created_again_after_delete(
    checkpoint_storage, make_state
) -> None:
    await branched(checkpoint_storage, make_state)
    await checkpoint_storage.delete("run-1")
    again = await Checkpoint("run-1", checkpoint_storage=checkpoint_storage).commit_snapshot(
        state=make_state(7)
    )
    loaded = await checkpoint_storage.load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots] == [again.snapshot_id]


async def test_commit_to_a_deleted_checkpoint_from_a_stale_object_conflicts(
    checkpoint_storage, make_state
) -> None:
    checkpoint, _ = await branched(checkpoint_storage, make_state)
    await checkpoint_storage.delete("run-1")
    with pytest.raises(CheckpointConflictError) as caught:
        await checkpoint.commit_snapshot(state=make_state(5))
    assert caught.value.actual_head_snapshot_id is None


async def test_list_returns_every_original_id_sorted(checkpoint_storage, make_state) -> None:
    for checkpoint_id in ("b", "a/b", "../x"):
        await Checkpoint(checkpoint_id, checkpoint_storage=checkpoint_storage).commit_snapshot(
            state=make_state()
        )
    assert await checkpoint_storage.list_checkpoint_ids() == sorted(["b", "a/b", "../x"])


@pytest.mark.parametrize("checkpoint_id", ODD_IDS, ids=range(len(ODD_IDS)))
async def test_ids_of_any_shape_round_trip(checkpoint_storage, make_state, checkpoint_id) -> None:
    snapshot = await Checkpoint(
        checkpoint_id, checkpoint_storage=checkpoint_storage
    ).commit_snapshot(state=make_state(1))
    loaded = await checkpoint_storage.load(checkpoint_id)
    assert loaded.checkpoint_id == checkpoint_id
    assert loaded.head_snapshot_id == snapshot.snapshot_id
    assert await checkpoint_storage.list_checkpoint_ids() == [checkpoint_id]


async def test_ids_that_differ_only_in_case_or_separators_never_collide(
    checkpoint_storage, make_state
) -> None:
    ids = ["Run", "run", "a/b", "a_b", "a\\b"]
    for n, checkpoint_id in enumerate(ids):
        await Checkpoint(checkpoint_id, checkpoint_storage=checkpoint_storage).commit_snapshot(
            state=make_state(n)
        )
    for n, checkpoint_id in enumerate(ids):
        loaded = await checkpoint_storage.load(checkpoint_id)
        assert loaded.head_snapshot.state["workflow_state"]["n"] == n


async def test_prune_removes_branches_off_the_kept_lineages(
    open_checkpoint_storage, make_state
) -> None:
    storage = open_checkpoint_storage()
    _, (first, second, third, fourth) = await branched(storage, make_state)
    removed = await storage.prune("run-1", keep=[])
    assert removed == [second.snapshot_id, third.snapshot_id]
    loaded = await open_checkpoint_storage().load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots] == [first.snapshot_id, fourth.snapshot_id]
    assert loaded.head_snapshot_id == fourth.snapshot_id
    assert loaded.head_snapshot.state == make_state(4)


async def test_prune_keeps_the_kept_snapshots_and_their_ancestors(
    checkpoint_storage, make_state
) -> None:
    _, snapshots = await branched(checkpoint_storage, make_state)
    third = snapshots[2]
    assert await checkpoint_storage.prune("run-1", keep=[third.snapshot_id]) == []
    loaded = await checkpoint_storage.load("run-1")
    assert len(loaded.snapshots) == 4


async def test_prune_with_an_unknown_kept_id_raises_and_removes_nothing(
    checkpoint_storage, make_state
) -> None:
    await branched(checkpoint_storage, make_state)
    with pytest.raises(SnapshotNotFoundError, match="typo"):
        await checkpoint_storage.prune("run-1", keep=["typo"])
    assert len((await checkpoint_storage.load("run-1")).snapshots) == 4


async def test_prune_of_an_unknown_checkpoint_raises_checkpoint_not_found(
    checkpoint_storage,
) -> None:
    with pytest.raises(CheckpointNotFoundError):
        await checkpoint_storage.prune("never-saved", keep=[])


async def test_commits_after_a_prune_still_persist(checkpoint_storage, make_state) -> None:
    checkpoint, _ = await branched(checkpoint_storage, make_state)
    await checkpoint_storage.prune("run-1", keep=[])
    await checkpoint.refresh()
    later = await checkpoint.commit_snapshot(state=make_state(5))
    loaded = await checkpoint_storage.load("run-1")
    assert loaded.head_snapshot_id == later.snapshot_id
    assert loaded.head_snapshot.state == make_state(5)


async def test_a_commit_cancelled_in_flight_lands_in_memory_and_storage_alike(
    checkpoint_storage, make_state
) -> None:
    gated = GatedStorage(checkpoint_storage)
    checkpoint = Checkpoint("run-1", checkpoint_storage=gated)
    commit = asyncio.create_task(checkpoint.commit_snapshot(state=make_state(1)))
    await asyncio.wait_for(gated.entered.wait(), timeout=10)
    commit.cancel()
    with pytest.raises(asyncio.CancelledError):
        await commit
    gated.gate.set()
    await asyncio.wait_for(gated.finished.wait(), timeout=10)
    stored = await checkpoint_storage.load("run-1")
    assert checkpoint.head_snapshot_id == stored.head_snapshot_id is not None
    assert [s.snapshot_id for s in checkpoint.snapshots] == [stored.head_snapshot_id]
    later = await checkpoint.commit_snapshot(state=make_state(2))  # no conflict afterwards
    assert (await checkpoint_storage.load("run-1")).head_snapshot_id == later.snapshot_id


async def test_two_objects_loaded_from_one_storage_share_the_run_guard(
    checkpoint_storage, make_state
) -> None:
    first, second = await loaded_twice(checkpoint_storage, make_state)
    with active_run(first), pytest.raises(CheckpointInUseError):  # noqa: SIM117
        with active_run(second):
            pass


async def test_state_is_persisted_in_the_format_the_storage_was_built_with(
    open_checkpoint_storage, configured_format, make_state
) -> None:
    storage = open_checkpoint_storage()
    assert storage.format == configured_format
    snapshot = await Checkpoint("run-1", checkpoint_storage=storage).commit_snapshot(
        state=make_state()
    )
    assert snapshot.record.format == configured_format
    loaded = await open_checkpoint_storage().load("run-1")  # a fresh view of what was stored
    assert loaded.head_snapshot.record.format == configured_format
    assert loaded.head_snapshot.state == make_state()
