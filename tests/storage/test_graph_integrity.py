"""Every backend refuses to load a checkpoint whose stored parent links are broken."""

from __future__ import annotations

import pytest

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, CheckpointStorage
from checkflow.errors import CorruptCheckpointError


async def test_a_stored_self_parent_loads_as_corrupt(checkpoint_storage: CheckpointStorage,
                                                     make_state) -> None:
    checkpoint = Checkpoint("loop", checkpoint_storage=checkpoint_storage)
    looped = CheckpointSnapshot(state=make_state(), snapshot_id="s1", parent_snapshot_id="s1")
    await checkpoint_storage.commit_snapshot(checkpoint, looped, expected_head_snapshot_id=None)
    with pytest.raises(CorruptCheckpointError, match="form a cycle"):
        await checkpoint_storage.load("loop")


async def test_a_stored_two_snapshot_cycle_loads_as_corrupt(
    checkpoint_storage: CheckpointStorage, make_state
) -> None:
    checkpoint = Checkpoint("loop", checkpoint_storage=checkpoint_storage)
    a = CheckpointSnapshot(state=make_state(), snapshot_id="a", parent_snapshot_id="b")
    b = CheckpointSnapshot(state=make_state(), snapshot_id="b", parent_snapshot_id="a")
    await checkpoint_storage.commit_snapshot(checkpoint, a, expected_head_snapshot_id=None)
    await checkpoint_storage.commit_snapshot(checkpoint, b, expected_head_snapshot_id="a")
    with pytest.raises(CorruptCheckpointError, match="form a cycle"):
        await checkpoint_storage.load("loop")


async def test_a_stored_dangling_parent_loads_as_corrupt(
    checkpoint_storage: CheckpointStorage, make_state
) -> None:
    checkpoint = Checkpoint("dangling", checkpoint_storage=checkpoint_storage)
    orphan = CheckpointSnapshot(state=make_state(), snapshot_id="s1", parent_snapshot_id="gone")
    await checkpoint_storage.commit_snapshot(checkpoint, orphan, expected_head_snapshot_id=None)
    with pytest.raises(CorruptCheckpointError, match="'gone'"):
        await checkpoint_storage.load("dangling")


async def test_prune_over_a_long_lineage_is_iterative(checkpoint_storage: CheckpointStorage,
                                                      make_state) -> None:
    checkpoint = Checkpoint("long", checkpoint_storage=checkpoint_storage)
    first = await checkpoint.commit_snapshot(state=make_state(0))
    for n in range(1, 1200):
        await checkpoint.commit_snapshot(state=make_state(n))
    checkpoint.restart_from(first.snapshot_id)
    branch = await checkpoint.commit_snapshot(state=make_state(-1))
    removed = await checkpoint_storage.prune("long", keep=[])
    assert len(removed) == 1199
    loaded = await checkpoint_storage.load("long")
    assert [s.snapshot_id for s in loaded.ancestors(branch.snapshot_id)] == [
        branch.snapshot_id, first.snapshot_id]
