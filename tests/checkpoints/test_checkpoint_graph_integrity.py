"""A checkpoint's parent links always form a forest inside the checkpoint, or it is corrupt."""

from __future__ import annotations

import pytest

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.errors import CorruptCheckpointError
from tests.checkpoints.conftest import four_buckets


def snapshot(sid: str, parent: str | None) -> CheckpointSnapshot:
    return CheckpointSnapshot(state=four_buckets(), snapshot_id=sid, parent_snapshot_id=parent)


def test_a_snapshot_that_is_its_own_parent_is_corrupt() -> None:
    with pytest.raises(CorruptCheckpointError, match="'s1' form a cycle"):
        Checkpoint("c", snapshots=[snapshot("s1", "s1")], head_snapshot_id="s1")


def test_a_longer_cycle_is_corrupt_even_beside_a_good_root() -> None:
    snapshots = [snapshot("root", None), snapshot("a", "c"), snapshot("b", "a"),
                 snapshot("c", "b"), snapshot("d", "root")]
    with pytest.raises(CorruptCheckpointError, match="form a cycle"):
        Checkpoint("c", snapshots=snapshots, head_snapshot_id="d")


def test_a_parent_outside_the_checkpoint_is_corrupt() -> None:
    with pytest.raises(CorruptCheckpointError, match="names parent 'gone'"):
        Checkpoint("c", snapshots=[snapshot("s1", "gone")], head_snapshot_id="s1")


def test_a_repeated_snapshot_id_is_corrupt() -> None:
    with pytest.raises(CorruptCheckpointError, match="'s1' twice"):
        Checkpoint("c", snapshots=[snapshot("s1", None), snapshot("s1", None)],
                   head_snapshot_id="s1")


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_from_bytes_refuses_a_cycle_naming_the_source(fmt: str) -> None:
    good = Checkpoint("c", snapshots=[snapshot("s1", None)], head_snapshot_id="s1")
    data = good.to_bytes(fmt)  # type: ignore[arg-type]
    if fmt == "json":
        bad = data.replace(b'"parent_snapshot_id":null', b'"parent_snapshot_id":"s1"')
    else:
        bad = data.replace(b"\xb2parent_snapshot_id\xc0", b"\xb2parent_snapshot_id\xa2s1")
    assert bad != data
    with pytest.raises(CorruptCheckpointError, match=r"^upload\.bin: .*form a cycle"):
        Checkpoint.from_bytes(bad, fmt, source="upload.bin")  # type: ignore[arg-type]


def test_ancestors_of_a_ten_thousand_deep_lineage_return() -> None:
    snapshots = [snapshot("s0", None)]
    snapshots += [snapshot(f"s{i}", f"s{i - 1}") for i in range(1, 10_000)]
    checkpoint = Checkpoint("c", snapshots=snapshots, head_snapshot_id="s9999")
    lineage = checkpoint.ancestors("s9999")
    assert len(lineage) == 10_000
    assert lineage[-1].snapshot_id == "s0"
    assert [s.snapshot_id for s in checkpoint.tips()] == ["s9999"]


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
@pytest.mark.parametrize("depth", [300, 600, 995, 2000, 100_000])
def test_from_bytes_never_raises_recursion_error(fmt: str, depth: int) -> None:
    good = Checkpoint("c", snapshots=[snapshot("s1", None)], head_snapshot_id="s1")
    data = good.to_bytes(fmt)  # type: ignore[arg-type]
    if fmt == "json":
        deep = b"[" * depth + b"]" * depth
        bad = data.replace(b'"input":[]', b'"input":' + deep, 1)
    else:
        deep = b"\x91" * (depth - 1) + b"\x90"
        bad = data.replace(b"\xa5input\x90", b"\xa5input" + deep, 1)
    assert bad != data
    try:
        loaded = Checkpoint.from_bytes(bad, fmt, source="upload")  # type: ignore[arg-type]
    except CorruptCheckpointError as exc:
        assert "nested too deeply" in str(exc)
        return
    with pytest.raises(CorruptCheckpointError, match="nested deeper than 200 levels"):
        _ = loaded.get_snapshot("s1").state


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_deep_metadata_is_refused_when_loading(fmt: str) -> None:
    good = Checkpoint("c", snapshots=[snapshot("s1", None)], head_snapshot_id="s1")
    data = good.to_bytes(fmt)  # type: ignore[arg-type]
    if fmt == "json":
        bad = data.replace(b'"metadata":{}', b'"metadata":{"x":' + b"[" * 400 + b"]" * 400 + b"}")
    else:
        bad = data.replace(b"\xa8metadata\x80",
                           b"\xa8metadata\x81\xa1x" + b"\x91" * 399 + b"\x90")
    assert bad != data
    with pytest.raises(CorruptCheckpointError, match="metadata nested deeper than 200"):
        Checkpoint.from_bytes(bad, fmt)  # type: ignore[arg-type]


async def test_committing_deep_metadata_is_a_nesting_error() -> None:
    from checkflow.errors import StateNestingError

    deep: list[object] = []
    for _ in range(300):
        deep = [deep]
    checkpoint = Checkpoint("c")
    with pytest.raises(StateNestingError, match="metadata"):
        await checkpoint.commit_snapshot(state=four_buckets(), metadata={"x": deep})
    assert checkpoint.snapshots == []
