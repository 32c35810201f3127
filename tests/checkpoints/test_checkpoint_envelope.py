"""to_bytes/from_bytes: versioned envelopes, and typed errors for every kind of bad input."""

from __future__ import annotations

import msgspec
import pytest

from checkflow.checkpoints import Checkpoint
from checkflow.errors import CorruptCheckpointError, UnsupportedFormatVersionError


@pytest.fixture
async def branched(make_state) -> Checkpoint:
    checkpoint = Checkpoint("run-7", workflow_name="factor", graph_signature_hash="sig-1")
    first = await checkpoint.commit_snapshot(state=make_state(1, when=(1, 2)))
    await checkpoint.commit_snapshot(state=make_state(2), metadata={"boundary": "x"})
    checkpoint.restart_from(first.snapshot_id)
    await checkpoint.commit_snapshot(state=make_state(3))
    return checkpoint


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
async def test_a_checkpoint_round_trips_through_bytes(branched: Checkpoint, fmt) -> None:
    restored = Checkpoint.from_bytes(branched.to_bytes(fmt), fmt)
    assert restored.checkpoint_id == "run-7"
    assert restored.workflow_name == "factor"
    assert restored.graph_signature_hash == "sig-1"
    assert restored.head_snapshot_id == branched.head_snapshot_id
    assert [(s.snapshot_id, s.parent_snapshot_id, s.timestamp) for s in restored.snapshots] == [
        (s.snapshot_id, s.parent_snapshot_id, s.timestamp) for s in branched.snapshots
    ]
    assert [s.metadata for s in restored.snapshots] == [s.metadata for s in branched.snapshots]
    assert [s.state for s in restored.snapshots] == [s.state for s in branched.snapshots]
    assert restored.checkpoint_storage is None


async def test_json_bytes_are_readable_json_with_the_state_inline(branched: Checkpoint) -> None:
    document = msgspec.json.decode(branched.to_bytes())
    assert document["kind"] == "checkflow.checkpoint" and document["version"] == 2
    assert document["snapshots"][0]["parts"]["workflow_state"]["n"] == 1


async def test_an_unknown_envelope_version_raises_unsupported_format_version(
    branched: Checkpoint,
) -> None:
    document = msgspec.json.decode(branched.to_bytes())
    document["version"] = 99
    with pytest.raises(UnsupportedFormatVersionError, match="version 99") as caught:
        Checkpoint.from_bytes(msgspec.json.encode(document), source="backup.json")
    assert caught.value.version == 99
    assert "backup.json" in str(caught.value)


async def test_an_unknown_envelope_kind_raises_unsupported_format_version() -> None:
    data = msgspec.json.encode({"kind": "agent-framework.checkpoint", "version": 1})
    with pytest.raises(UnsupportedFormatVersionError, match="agent-framework"):
        Checkpoint.from_bytes(data)


async def test_an_unknown_snapshot_version_raises_unsupported_format_version(
    branched: Checkpoint,
) -> None:
    document = msgspec.json.decode(branched.to_bytes())
    document["snapshots"][1]["format_version"] = 99
    with pytest.raises(UnsupportedFormatVersionError, match=r"backup\.json"):
        Checkpoint.from_bytes(msgspec.json.encode(document), source="backup.json")


async def test_truncated_bytes_raise_corrupt_checkpoint_naming_the_source(
    branched: Checkpoint,
) -> None:
    data = branched.to_bytes()
    with pytest.raises(CorruptCheckpointError, match=r"backup\.json"):
        Checkpoint.from_bytes(data[: len(data) // 2], source="backup.json")


async def test_bit_flipped_msgpack_raises_corrupt_checkpoint(branched: Checkpoint) -> None:
    data = bytearray(branched.to_bytes("msgpack"))
    data[0] ^= 0x80  # the top-level map header becomes a small integer
    with pytest.raises(CorruptCheckpointError):
        Checkpoint.from_bytes(bytes(data), "msgpack")


async def test_json_read_as_msgpack_raises_corrupt_checkpoint(branched: Checkpoint) -> None:
    with pytest.raises(CorruptCheckpointError):
        Checkpoint.from_bytes(branched.to_bytes("json"), "msgpack")


async def test_an_envelope_whose_head_is_missing_raises_corrupt_checkpoint(
    branched: Checkpoint,
) -> None:
    document = msgspec.json.decode(branched.to_bytes())
    document["head_snapshot_id"] = "lost"
    with pytest.raises(CorruptCheckpointError, match="lost"):
        Checkpoint.from_bytes(msgspec.json.encode(document))


async def test_the_storage_attachment_is_never_serialized(make_state) -> None:
    from checkflow.storage import InMemoryCheckpointStorage

    checkpoint = Checkpoint("run-1", checkpoint_storage=InMemoryCheckpointStorage())
    await checkpoint.commit_snapshot(state=make_state())
    assert b"Storage" not in checkpoint.to_bytes()
    assert Checkpoint.from_bytes(checkpoint.to_bytes()).checkpoint_storage is None


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
async def test_bytes_keep_a_working_head_moved_by_restart_from(branched: Checkpoint, fmt) -> None:
    first = branched.snapshots[0]
    branched.restart_from(first.snapshot_id)
    restored = Checkpoint.from_bytes(branched.to_bytes(fmt), fmt)
    assert restored.head_snapshot_id == first.snapshot_id
    assert [s.snapshot_id for s in restored.tips()] == [s.snapshot_id for s in branched.tips()]
    assert [s.snapshot_id for s in restored.children(first.snapshot_id)] == [
        s.snapshot_id for s in branched.children(first.snapshot_id)
    ]


@pytest.mark.parametrize(("stored", "fmt"), [("msgpack", "json"), ("json", "msgpack")])
async def test_bytes_of_another_format_than_the_storage_carry_the_same_state(
    make_state, stored, fmt
) -> None:
    from checkflow.storage import InMemoryCheckpointStorage

    storage = InMemoryCheckpointStorage(format=stored)
    checkpoint = Checkpoint("run-1", checkpoint_storage=storage)
    first = await checkpoint.commit_snapshot(state=make_state(1, when=(1, 2), raw=b"\x00\xff"))
    await checkpoint.commit_snapshot(state=make_state(2))
    checkpoint.restart_from(first.snapshot_id)
    await checkpoint.commit_snapshot(state=make_state(3, tags={"a", "b"}))
    restored = Checkpoint.from_bytes(checkpoint.to_bytes(fmt), fmt)
    assert [s.state for s in restored.snapshots] == [s.state for s in checkpoint.snapshots]
    assert {s.record.format for s in restored.snapshots} == {fmt}
