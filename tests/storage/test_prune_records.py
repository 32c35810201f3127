"""Every backend records what prune() removed, so a pruned head is not mistaken for a lost one."""

from __future__ import annotations

import pytest

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.errors import CheckpointLostError, CorruptCheckpointError
from tests.storage.conftest import OpenStorage, four_buckets


async def test_a_fresh_checkpoint_has_no_pruned_snapshots(open_checkpoint_storage: OpenStorage,
                                                          make_state) -> None:
    storage = open_checkpoint_storage()
    await Checkpoint("c", checkpoint_storage=storage).commit_snapshot(state=make_state())
    assert (await storage.load("c")).pruned_snapshot_ids == frozenset()
    assert Checkpoint().pruned_snapshot_ids == frozenset()


async def test_pruned_ids_survive_a_reload_and_accumulate(open_checkpoint_storage: OpenStorage,
                                                          make_state) -> None:
    storage = open_checkpoint_storage()
    checkpoint = Checkpoint("c", checkpoint_storage=storage)
    root = await checkpoint.commit_snapshot(state=make_state(0))
    old_head = await checkpoint.commit_snapshot(state=make_state(1))
    checkpoint.restart_from(root.snapshot_id)
    await checkpoint.commit_snapshot(state=make_state(2))
    assert await storage.prune("c", keep=[]) == [old_head.snapshot_id]
    reloaded = await open_checkpoint_storage().load("c")
    assert reloaded.pruned_snapshot_ids == {old_head.snapshot_id}
    assert old_head.snapshot_id not in {s.snapshot_id for s in reloaded.snapshots}

    reloaded.restart_from(root.snapshot_id)
    third = await reloaded.commit_snapshot(state=make_state(3))
    second_branch = (await storage.load("c")).children(root.snapshot_id)[0]
    assert await storage.prune("c", keep=[]) == [second_branch.snapshot_id]
    final = await open_checkpoint_storage().load("c")
    assert final.pruned_snapshot_ids == {old_head.snapshot_id, second_branch.snapshot_id}
    assert final.head_snapshot_id == third.snapshot_id


async def test_refresh_picks_up_pruned_ids(open_checkpoint_storage: OpenStorage,
                                           make_state) -> None:
    storage = open_checkpoint_storage()
    checkpoint = Checkpoint("c", checkpoint_storage=storage)
    root = await checkpoint.commit_snapshot(state=make_state(0))
    doomed = await checkpoint.commit_snapshot(state=make_state(1))
    checkpoint.restart_from(root.snapshot_id)
    await checkpoint.commit_snapshot(state=make_state(2))
    await storage.prune("c", keep=[])
    assert checkpoint.pruned_snapshot_ids == frozenset()
    await checkpoint.refresh()
    assert checkpoint.pruned_snapshot_ids == {doomed.snapshot_id}


def test_pruned_snapshot_ids_is_read_only() -> None:
    checkpoint = Checkpoint("c", pruned_snapshot_ids=["a"])
    assert checkpoint.pruned_snapshot_ids == frozenset({"a"})
    with pytest.raises(AttributeError):
        checkpoint.pruned_snapshot_ids = frozenset()  # type: ignore[misc]


def test_checkpoint_lost_error_names_the_checkpoint_and_both_heads() -> None:
    error = CheckpointLostError("conv-1", expected_head_snapshot_id="s9",
                                actual_head_snapshot_id="s7", source="log")
    assert isinstance(error, CorruptCheckpointError)
    assert (error.checkpoint_id, error.expected_head_snapshot_id,
            error.actual_head_snapshot_id) == ("conv-1", "s9", "s7")
    for fact in ("'conv-1'", "'s9'", "'s7'"):
        assert fact in str(error)
    gone = CheckpointLostError("conv-1", expected_head_snapshot_id="s9",
                               actual_head_snapshot_id=None)
    assert "None" in str(gone)


async def test_verify_of_healthy_checkpoints_is_ok(open_checkpoint_storage: OpenStorage,
                                                   make_state) -> None:
    storage = open_checkpoint_storage()
    for cid in ("b", "a"):
        checkpoint = Checkpoint(cid, checkpoint_storage=storage)
        root = await checkpoint.commit_snapshot(state=make_state(0))
        await checkpoint.commit_snapshot(state=make_state(1))
        checkpoint.restart_from(root.snapshot_id)
        await checkpoint.commit_snapshot(state=make_state(2))
    await storage.prune("a", keep=[])
    reports = await storage.verify()  # type: ignore[attr-defined]
    assert [r.checkpoint_id for r in reports] == ["a", "b"]
    assert all(r.ok for r in reports), reports
    (one,) = await storage.verify("b")  # type: ignore[attr-defined]
    assert one.checkpoint_id == "b" and one.ok


async def test_verify_of_an_unknown_checkpoint_is_not_found(
    open_checkpoint_storage: OpenStorage,
) -> None:
    from checkflow.errors import CheckpointNotFoundError

    with pytest.raises(CheckpointNotFoundError):
        await open_checkpoint_storage().verify("nope")  # type: ignore[attr-defined]


async def test_verify_reports_a_broken_graph(open_checkpoint_storage: OpenStorage) -> None:
    storage = open_checkpoint_storage()
    checkpoint = Checkpoint("loop", checkpoint_storage=storage)
    looped = CheckpointSnapshot(state=four_buckets(), snapshot_id="s1", parent_snapshot_id="s1")
    await storage.commit_snapshot(checkpoint, looped, expected_head_snapshot_id=None)
    (report,) = await storage.verify("loop")  # type: ignore[attr-defined]
    assert not report.ok
    assert any("form a cycle" in problem for problem in report.corrupt)
