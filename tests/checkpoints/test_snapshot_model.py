"""Snapshots: exactly four buckets, the encoding is the copy, ids sort in creation order."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime

import msgspec
import pytest

from checkflow._random import random_hex
from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, SnapshotRecord
from checkflow.checkpoints._ids import new_snapshot_id
from checkflow.errors import (
    CorruptCheckpointError,
    UnregisteredStateTypeError,
    UnsupportedFormatVersionError,
)
from tests.forked import in_forked_child


async def test_commit_refuses_a_state_without_exactly_the_four_buckets(make_state) -> None:
    state = make_state()
    state["extra_bucket"] = {}
    with pytest.raises(ValueError, match="exactly the keys"):
        await Checkpoint().commit_snapshot(state=state)


async def test_commit_refuses_a_state_missing_a_bucket(make_state) -> None:
    state = make_state()
    del state["edge_states"]
    with pytest.raises(ValueError, match="edge_states"):
        await Checkpoint().commit_snapshot(state=state)


async def test_commit_refuses_messages_without_exactly_input_pending_output(make_state) -> None:
    state = make_state()
    state["messages"] = {"input": [], "pending": []}
    with pytest.raises(ValueError, match="messages"):
        await Checkpoint().commit_snapshot(state=state)


async def test_commit_does_not_police_bucket_contents(make_state) -> None:
    state = make_state()
    state["messages"]["pending"] = {"anything": ("goes", 1)}
    snapshot = await Checkpoint().commit_snapshot(state=state)
    assert snapshot.state["messages"]["pending"] == {"anything": ("goes", 1)}


async def test_a_refused_state_leaves_the_checkpoint_unchanged(make_state) -> None:
    checkpoint = Checkpoint()
    with pytest.raises(ValueError):
        await checkpoint.commit_snapshot(state={"workflow_state": {}})
    assert checkpoint.snapshots == []


async def test_an_unregistered_value_fails_the_commit_naming_its_path(make_state) -> None:
    @dataclasses.dataclass
    class Notes:
        text: str

    state = make_state()
    state["executor_states"]["reviewer"] = {"notes": [Notes("x")]}
    checkpoint = Checkpoint()
    with pytest.raises(UnregisteredStateTypeError, match=r"executor_states\.reviewer"):
        await checkpoint.commit_snapshot(state=state)
    assert checkpoint.snapshots == []


async def test_mutating_the_committed_dict_never_changes_the_snapshot(make_state) -> None:
    state = make_state(items=[1, 2])
    snapshot = await Checkpoint().commit_snapshot(state=state)
    state["workflow_state"]["items"].append(3)
    assert snapshot.state["workflow_state"]["items"] == [1, 2]


async def test_mutating_a_read_state_never_changes_the_snapshot(make_state) -> None:
    snapshot = await Checkpoint().commit_snapshot(state=make_state(items=[1, 2]))
    read = snapshot.state
    read["workflow_state"]["items"].append(3)
    assert snapshot.state["workflow_state"]["items"] == [1, 2]
    assert snapshot.state is not snapshot.state


async def test_state_round_trips_tuples_datetimes_and_uuids(make_state) -> None:
    value = {"when": datetime(2026, 1, 2, 3, 4, 5), "pair": (1, "a"), "id": uuid.UUID(int=7)}
    snapshot = await Checkpoint().commit_snapshot(state=make_state(value=value))
    assert snapshot.state["workflow_state"]["value"] == value


async def test_metadata_is_kept_and_copied_per_read(make_state) -> None:
    snapshot = await Checkpoint().commit_snapshot(
        state=make_state(), metadata={"boundary": "superstep_completed", "superstep": 3}
    )
    snapshot.metadata["boundary"] = "changed"
    assert snapshot.metadata == {"boundary": "superstep_completed", "superstep": 3}


async def test_timestamp_is_iso_8601_in_utc(make_state) -> None:
    snapshot = await Checkpoint().commit_snapshot(state=make_state())
    parsed = datetime.fromisoformat(snapshot.timestamp)
    assert parsed.utcoffset() is not None and parsed.utcoffset().total_seconds() == 0


async def test_record_splits_state_two_levels_deep_into_encoded_parts(make_state) -> None:
    state = make_state()
    state["executor_states"]["reviewer"] = {"count": 2}
    snapshot = CheckpointSnapshot(state=state, format="msgpack")
    record = snapshot.record
    assert record.format == "msgpack"
    assert msgspec.msgpack.decode(record.parts["executor_states"]["reviewer"]) == {"count": 2}
    assert set(record.parts["messages"]) == {"input", "pending", "output"}
    assert CheckpointSnapshot.from_record(record) == snapshot


def test_from_record_refuses_an_unknown_format_version(make_state) -> None:
    record = msgspec.structs.replace(
        CheckpointSnapshot(state=make_state()).record, format_version=99
    )
    with pytest.raises(UnsupportedFormatVersionError, match="version 99"):
        CheckpointSnapshot.from_record(record)


def test_a_corrupt_part_raises_corrupt_checkpoint_at_access_naming_the_source(make_state) -> None:
    good = CheckpointSnapshot(state=make_state()).record
    parts = {**good.parts, "workflow_state": {"n": b'{"unterminated'}}
    record = SnapshotRecord(**{**msgspec.structs.asdict(good), "parts": parts})
    snapshot = CheckpointSnapshot.from_record(record, source="store/run-1/log")
    with pytest.raises(CorruptCheckpointError, match="store/run-1/log"):
        _ = snapshot.state


def test_verify_accepts_intact_bytes_and_rejects_a_corrupt_part(make_state) -> None:
    good = CheckpointSnapshot(state=make_state(1, pair=(1, 2))).record
    CheckpointSnapshot.from_record(good).verify()
    parts = {**good.parts, "workflow_state": {"n": b"\x93not json"}}
    bad = CheckpointSnapshot.from_record(msgspec.structs.replace(good, parts=parts), source="s")
    with pytest.raises(CorruptCheckpointError, match="s: "):
        bad.verify()


def test_snapshot_ids_are_unique_and_sort_in_creation_order_within_a_millisecond() -> None:
    ids = [new_snapshot_id() for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert all(uuid.UUID(i).version == 7 for i in ids[:10])


def test_a_forked_child_draws_other_random_bits_for_its_snapshot_ids() -> None:
    theirs = in_forked_child(lambda: [new_snapshot_id()[-12:] for _ in range(8)])
    ours = [new_snapshot_id()[-12:] for _ in range(8)]  # the 48 low random bits
    assert not set(theirs) & set(ours)


def test_random_hex_ids_are_laid_out_as_uuid4_hex_and_unique() -> None:
    ids = [random_hex() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for value in ids[:50]:
        parsed = uuid.UUID(hex=value)
        assert (parsed.version, parsed.variant, parsed.hex) == (4, uuid.RFC_4122, value)
