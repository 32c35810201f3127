"""Checkpoints inside other state: whole when unattached, a reference when storage-backed."""

from __future__ import annotations

import pytest

from checkflow import state as codec
from checkflow.checkpoints import Checkpoint, CheckpointReference
from checkflow.storage import InMemoryCheckpointStorage


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
async def test_an_unattached_checkpoint_round_trips_whole(make_state, fmt) -> None:
    checkpoint = Checkpoint("child-run", workflow_name="child")
    first = await checkpoint.commit_snapshot(state=make_state(1, pair=(1, 2)))
    await checkpoint.commit_snapshot(state=make_state(2))
    checkpoint.restart_from(first.snapshot_id)
    decoded = codec.decode(codec.encode({"cp": checkpoint}, format=fmt), format=fmt)["cp"]
    assert isinstance(decoded, Checkpoint)
    assert decoded.head_snapshot_id == first.snapshot_id
    assert [s.state for s in decoded.snapshots] == [s.state for s in checkpoint.snapshots]


async def test_a_storage_backed_checkpoint_is_kept_as_a_reference(make_state) -> None:
    checkpoint = Checkpoint("run-1", checkpoint_storage=InMemoryCheckpointStorage())
    snapshot = await checkpoint.commit_snapshot(state=make_state())
    decoded = codec.decode(codec.encode({"cp": checkpoint}))["cp"]
    assert decoded == CheckpointReference("run-1", snapshot.snapshot_id)


async def test_a_reference_round_trips_as_itself() -> None:
    reference = CheckpointReference("run-1", "head-1")
    assert codec.decode(codec.encode([reference])) == [reference]
