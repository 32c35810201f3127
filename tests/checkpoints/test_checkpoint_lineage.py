"""The snapshot graph: lineage, branching with restart_from, children, ancestors, tips."""

from __future__ import annotations

import pytest

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.errors import CorruptCheckpointError, SnapshotNotFoundError


async def test_a_new_checkpoint_has_no_snapshots_and_no_head() -> None:
    checkpoint = Checkpoint("run-1")
    assert checkpoint.snapshots == []
    assert checkpoint.head_snapshot_id is None
    assert checkpoint.head_snapshot is None
    assert checkpoint.tips() == []


async def test_checkpoint_id_defaults_to_a_fresh_unique_id() -> None:
    assert Checkpoint().checkpoint_id != Checkpoint().checkpoint_id


async def test_commits_chain_each_snapshot_to_the_previous_head(make_state) -> None:
    checkpoint = Checkpoint()
    first = await checkpoint.commit_snapshot(state=make_state(1))
    second = await checkpoint.commit_snapshot(state=make_state(2))
    assert first.parent_snapshot_id is None
    assert second.parent_snapshot_id == first.snapshot_id
    assert checkpoint.head_snapshot_id == second.snapshot_id
    assert checkpoint.head_snapshot == second


async def test_restart_from_then_commit_branches_and_keeps_every_snapshot(make_state) -> None:
    checkpoint = Checkpoint()
    first = await checkpoint.commit_snapshot(state=make_state(1))
    second = await checkpoint.commit_snapshot(state=make_state(2))
    third = await checkpoint.commit_snapshot(state=make_state(3))
    checkpoint.restart_from(first.snapshot_id)
    branch = await checkpoint.commit_snapshot(state=make_state(4))

    assert branch.parent_snapshot_id == first.snapshot_id
    assert [s.snapshot_id for s in checkpoint.snapshots] == [
        first.snapshot_id,
        second.snapshot_id,
        third.snapshot_id,
        branch.snapshot_id,
    ]
    assert checkpoint.head_snapshot_id == branch.snapshot_id
    assert {s.snapshot_id for s in checkpoint.tips()} == {third.snapshot_id, branch.snapshot_id}


async def test_restart_from_moves_only_the_working_head(make_state) -> None:
    checkpoint = Checkpoint()
    first = await checkpoint.commit_snapshot(state=make_state(1))
    second = await checkpoint.commit_snapshot(state=make_state(2))
    checkpoint.restart_from(first.snapshot_id)
    assert checkpoint.head_snapshot_id == first.snapshot_id
    assert checkpoint.persisted_head_snapshot_id == second.snapshot_id
    assert len(checkpoint.snapshots) == 2


async def test_restart_from_an_unknown_snapshot_raises_and_keeps_the_head(make_state) -> None:
    checkpoint = Checkpoint("run-1")
    first = await checkpoint.commit_snapshot(state=make_state(1))
    with pytest.raises(SnapshotNotFoundError) as caught:
        checkpoint.restart_from("snapshot-from-another-checkpoint")
    assert caught.value.snapshot_id == "snapshot-from-another-checkpoint"
    assert caught.value.checkpoint_id == "run-1"
    assert checkpoint.head_snapshot_id == first.snapshot_id


async def test_get_snapshot_of_an_unknown_id_raises_snapshot_not_found() -> None:
    with pytest.raises(SnapshotNotFoundError, match="nope"):
        Checkpoint().get_snapshot("nope")


async def test_children_lists_direct_children_in_creation_order(make_state) -> None:
    checkpoint = Checkpoint()
    root = await checkpoint.commit_snapshot(state=make_state(0))
    a = await checkpoint.commit_snapshot(state=make_state(1))
    checkpoint.restart_from(root.snapshot_id)
    b = await checkpoint.commit_snapshot(state=make_state(2))
    assert checkpoint.children(root.snapshot_id) == [a, b]
    assert checkpoint.children(b.snapshot_id) == []


async def test_ancestors_run_from_the_snapshot_itself_to_the_root(make_state) -> None:
    checkpoint = Checkpoint()
    a = await checkpoint.commit_snapshot(state=make_state(1))
    b = await checkpoint.commit_snapshot(state=make_state(2))
    c = await checkpoint.commit_snapshot(state=make_state(3))
    assert checkpoint.ancestors(c.snapshot_id) == [c, b, a]


async def test_constructor_rejects_a_head_that_is_not_among_the_snapshots(make_state) -> None:
    snapshot = CheckpointSnapshot(state=make_state())
    with pytest.raises(SnapshotNotFoundError):
        Checkpoint("run-1", snapshots=[snapshot], head_snapshot_id="elsewhere")


async def test_constructor_rejects_a_snapshot_whose_parent_is_missing(make_state) -> None:
    orphan = CheckpointSnapshot(state=make_state(), parent_snapshot_id="pruned-away")
    with pytest.raises(CorruptCheckpointError, match="pruned-away"):
        Checkpoint("run-1", snapshots=[orphan], head_snapshot_id=orphan.snapshot_id)


async def test_snapshots_returns_a_copy_the_caller_cannot_use_to_alter_history(
    make_state,
) -> None:
    checkpoint = Checkpoint()
    await checkpoint.commit_snapshot(state=make_state())
    checkpoint.snapshots.clear()
    assert len(checkpoint.snapshots) == 1
