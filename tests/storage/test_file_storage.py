"""File storage specifics: layout, content-addressed parts, torn tails, corruption, caches."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import resource
import signal
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from checkflow._fs import safe_name
from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, SnapshotRecord
from checkflow.errors import (
    CheckpointConflictError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    StorageFullError,
    StorageUnavailableError,
    UnregisteredStateTypeError,
    UnsupportedFormatVersionError,
)
from checkflow.storage import FileCheckpointStorage
from checkflow.storage._log import END, frame, scan

FUTURE_LOG = frame(  # a log header from a release that writes log version 9
    msgspec.json.encode(
        {
            "kind": "checkflow.checkpoint-log",
            "version": 9,
            "checkpoint_id": "run-1",
            "format": "json",
        }
    )
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "checkpoints"


def log_of(root: Path, checkpoint_id: str = "run-1") -> Path:
    return root / safe_name(checkpoint_id) / "log"


def record_offsets(log: Path, kind: bytes) -> list[tuple[int, bytes]]:
    """(byte offset, payload) of every record of ``kind`` (b"C", b"B", ...) in a v2 log."""
    payloads, _ = scan(log.read_bytes(), source="test")
    found, pos = [], 0
    for payload in payloads:
        if payload[:1] == kind and pos:
            found.append((pos, payload))
        pos += len(frame(payload))
    return found


async def commit_chain(storage: FileCheckpointStorage, make_state, count: int, **extra):
    checkpoint = Checkpoint("run-1", checkpoint_storage=storage)
    for n in range(count):
        await checkpoint.commit_snapshot(state=make_state(n, **extra))
    return checkpoint


async def test_traversal_and_reserved_ids_stay_inside_root(root: Path, make_state) -> None:
    storage = FileCheckpointStorage(root)
    for checkpoint_id in ("../x", "a/b", "CON", "x" * 300, "/etc/passwd"):
        await Checkpoint(checkpoint_id, checkpoint_storage=storage).commit_snapshot(
            state=make_state()
        )
    assert not (root.parent / "x").exists()
    for path in root.parent.rglob("*"):
        assert path.resolve().is_relative_to(root.resolve())
    assert all(re.fullmatch(r"[0-9a-f]{40}", folder.name) for folder in root.iterdir())


async def test_an_unchanged_large_part_is_written_once(root: Path, make_state) -> None:
    storage = FileCheckpointStorage(root)
    shared = "x" * 100_000
    checkpoint = await commit_chain(storage, make_state, 2, shared=shared)
    size_after_two = log_of(root).stat().st_size
    for n in range(2, 52):
        await checkpoint.commit_snapshot(state=make_state(n, shared=shared))
    per_commit = (log_of(root).stat().st_size - size_after_two) / 50
    assert size_after_two > 100_000
    assert per_commit < 2048
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert loaded.snapshots[10].state["workflow_state"]["shared"] == shared


async def test_bytes_per_commit_do_not_grow_with_the_number_of_snapshots(
    root: Path, make_state
) -> None:
    storage = FileCheckpointStorage(root)
    checkpoint = await commit_chain(storage, make_state, 1)
    sizes = [log_of(root).stat().st_size]
    for n in range(200):
        await checkpoint.commit_snapshot(state=make_state(n % 10))
        sizes.append(log_of(root).stat().st_size)
    early, late = sizes[11] - sizes[10], sizes[200] - sizes[199]
    assert late == early


async def test_a_torn_last_record_is_ignored_and_the_previous_head_loads(
    root: Path, make_state
) -> None:
    checkpoint = await commit_chain(FileCheckpointStorage(root), make_state, 3)
    acked = checkpoint.snapshots[1]
    with open(log_of(root), "r+b") as handle:  # cut the last record short, as a crash does
        handle.truncate(log_of(root).stat().st_size - 10)
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert loaded.head_snapshot_id == acked.snapshot_id
    assert len(loaded.snapshots) == 2


async def test_a_zero_filled_tail_is_ignored(root: Path, make_state) -> None:
    checkpoint = await commit_chain(FileCheckpointStorage(root), make_state, 2)
    with open(log_of(root), "ab") as handle:
        handle.write(b"\0" * 4096)
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert loaded.head_snapshot_id == checkpoint.head_snapshot_id


async def test_the_next_commit_after_a_torn_tail_replaces_it(root: Path, make_state) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 2)
    with open(log_of(root), "ab") as handle:
        handle.write(frame(b"half a record")[:9])
    loaded = await FileCheckpointStorage(root).load("run-1")
    later = await loaded.commit_snapshot(state=make_state(9))
    reloaded = await FileCheckpointStorage(root).load("run-1")
    assert reloaded.head_snapshot_id == later.snapshot_id
    assert reloaded.head_snapshot.state == make_state(9)


async def test_an_interrupted_first_commit_leaves_no_checkpoint(root: Path, make_state) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 1)
    with open(log_of(root), "r+b") as handle:
        handle.truncate(20)
    storage = FileCheckpointStorage(root)
    with pytest.raises(CheckpointNotFoundError):
        await storage.load("run-1")
    assert await storage.list_checkpoint_ids() == []


async def test_a_first_commit_after_an_interrupted_one_creates_the_checkpoint(
    root: Path, make_state
) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 1)
    with open(log_of(root), "r+b") as handle:  # header whole, first commit cut short
        handle.truncate(log_of(root).stat().st_size - 30)
    assert await FileCheckpointStorage(root).list_checkpoint_ids() == []
    snapshot = await Checkpoint(
        "run-1", checkpoint_storage=FileCheckpointStorage(root)
    ).commit_snapshot(state=make_state(5))
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots] == [snapshot.snapshot_id]


async def test_a_cached_tail_is_not_trusted_after_another_instance_recreated_the_log(
    root: Path, make_state
) -> None:
    mine, theirs = FileCheckpointStorage(root), FileCheckpointStorage(root)
    checkpoint = await commit_chain(mine, make_state, 1)
    await theirs.delete("run-1")
    replacement = await Checkpoint("run-1", checkpoint_storage=theirs).commit_snapshot(
        state=make_state(0)
    )
    with pytest.raises(CheckpointConflictError) as caught:
        await checkpoint.commit_snapshot(state=make_state(1))
    assert caught.value.actual_head_snapshot_id == replacement.snapshot_id
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots] == [replacement.snapshot_id]


async def test_a_same_size_log_rewritten_in_place_is_re_read_not_trusted(
    root: Path, make_state, tmp_path: Path
) -> None:
    mine = await commit_chain(FileCheckpointStorage(root), make_state, 2)  # caches its index
    elsewhere = tmp_path / "elsewhere"  # another history of the same id, of the same size
    theirs = await commit_chain(FileCheckpointStorage(elsewhere), make_state, 2)
    other = log_of(elsewhere).read_bytes()
    assert len(other) == log_of(root).stat().st_size  # the same size: only bytes differ
    with open(log_of(root), "r+b") as handle:  # copied over in place: the inode is kept
        handle.write(other)
    with pytest.raises(CheckpointConflictError) as caught:
        await mine.commit_snapshot(state=make_state(2))
    assert caught.value.actual_head_snapshot_id == theirs.head_snapshot_id
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots] == [s.snapshot_id for s in theirs.snapshots]


async def test_a_log_copied_under_another_id_raises_corrupt(root: Path, make_state) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 1)
    (root / safe_name("run-2")).mkdir()
    log_of(root, "run-2").write_bytes(log_of(root).read_bytes())
    with pytest.raises(CorruptCheckpointError, match="belongs to checkpoint 'run-1'"):
        await FileCheckpointStorage(root).load("run-2")


async def test_a_writer_refuses_a_log_copied_under_another_id(root: Path, make_state) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 1)
    (root / safe_name("run-2")).mkdir()
    log_of(root, "run-2").write_bytes(log_of(root).read_bytes())
    newcomer = Checkpoint("run-2", checkpoint_storage=FileCheckpointStorage(root))
    with pytest.raises(CorruptCheckpointError, match="belongs to"):
        await newcomer.commit_snapshot(state=make_state())
    assert log_of(root, "run-2").read_bytes() == log_of(root).read_bytes()


def flip_bit(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


async def test_a_damaged_record_before_the_last_raises_corrupt_naming_the_file(
    root: Path, make_state
) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 3)
    first_commit = record_offsets(log_of(root), b"C")[0][0]
    flip_bit(log_of(root), first_commit + 30)  # inside the first commit record's payload
    with pytest.raises(CorruptCheckpointError) as caught:
        await FileCheckpointStorage(root).load("run-1")
    assert str(log_of(root)) in str(caught.value)


async def test_a_damaged_older_part_is_corruption_when_read_and_verify_reports_it(
    root: Path, make_state
) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 3)
    at, payload = record_offsets(log_of(root), b"B")[0]  # the first snapshot's own "n" part
    flip_bit(log_of(root), at + 16 + len(payload) - 1)  # its last byte, past the hash
    loaded = await FileCheckpointStorage(root).load("run-1")  # the head does not need it
    with pytest.raises(CorruptCheckpointError, match="fails its checksum") as caught:
        _ = loaded.snapshots[0].state
    assert str(log_of(root)) in str(caught.value)
    (report,) = await FileCheckpointStorage(root).verify("run-1")
    assert not report.ok and report.corrupt


async def test_a_bit_flip_in_the_last_msgpack_record_is_corruption_not_a_torn_write(
    root: Path, make_state
) -> None:
    await commit_chain(FileCheckpointStorage(root, format="msgpack"), make_state, 3)
    flip_bit(log_of(root), log_of(root).stat().st_size - len(END) - 5)
    with pytest.raises(CorruptCheckpointError, match="checksum"):
        await FileCheckpointStorage(root, format="msgpack").load("run-1")


async def test_a_writer_refuses_to_append_to_a_damaged_log(root: Path, make_state) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 2)
    flip_bit(log_of(root), record_offsets(log_of(root), b"C")[0][0] + 30)
    newcomer = Checkpoint("run-1", checkpoint_storage=FileCheckpointStorage(root))
    with pytest.raises(CorruptCheckpointError):
        await newcomer.commit_snapshot(state=make_state(5))


async def test_an_unknown_log_version_raises_unsupported_format_version(
    root: Path, make_state
) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 1)
    log_of(root).write_bytes(FUTURE_LOG)
    with pytest.raises(UnsupportedFormatVersionError, match="version 9") as caught:
        await FileCheckpointStorage(root).load("run-1")
    assert str(log_of(root)) in str(caught.value)


async def test_a_snapshot_of_an_unknown_version_raises_unsupported_naming_the_file(
    root: Path, make_state
) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 1)
    payloads, _ = scan(log_of(root).read_bytes(), source="log")
    commit = msgspec.json.decode(payloads[-1][1:])
    commit["format_version"] = 99  # written by a future release
    payloads[-1] = b"C" + msgspec.json.encode(commit)
    log_of(root).write_bytes(b"".join(frame(p) for p in payloads))
    with pytest.raises(UnsupportedFormatVersionError) as caught:
        await FileCheckpointStorage(root).load("run-1")
    assert str(log_of(root)) in str(caught.value)


async def test_a_writer_never_truncates_a_log_of_an_unknown_version(root: Path, make_state) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 1)
    log_of(root).write_bytes(FUTURE_LOG)
    newcomer = Checkpoint("run-1", checkpoint_storage=FileCheckpointStorage(root))
    with pytest.raises(UnsupportedFormatVersionError):
        await newcomer.commit_snapshot(state=make_state())
    assert log_of(root).read_bytes() == FUTURE_LOG


def with_part(record: SnapshotRecord, data: bytes) -> CheckpointSnapshot:
    parts = {**record.parts, "workflow_state": {"n": data}}
    return CheckpointSnapshot.from_record(msgspec.structs.replace(record, parts=parts))


BAD_PART = b'{"$type":"builtins.tuple","$value":5}'  # valid JSON, not a valid encoded tuple


async def test_load_verifies_the_head_state_and_names_the_file(root: Path, make_state) -> None:
    storage = FileCheckpointStorage(root)
    checkpoint = Checkpoint("run-1")
    bad = with_part(CheckpointSnapshot(state=make_state()).record, BAD_PART)
    await storage.commit_snapshot(checkpoint, bad, expected_head_snapshot_id=None)
    with pytest.raises(CorruptCheckpointError) as caught:
        await FileCheckpointStorage(root).load("run-1")
    assert str(log_of(root)) in str(caught.value)


async def test_an_older_bad_state_raises_corrupt_when_it_is_read(root: Path, make_state) -> None:
    storage = FileCheckpointStorage(root)
    checkpoint = Checkpoint("run-1")
    bad = with_part(CheckpointSnapshot(state=make_state()).record, BAD_PART)
    await storage.commit_snapshot(checkpoint, bad, expected_head_snapshot_id=None)
    good = CheckpointSnapshot(state=make_state(1), parent_snapshot_id=bad.snapshot_id)
    await storage.commit_snapshot(checkpoint, good, expected_head_snapshot_id=bad.snapshot_id)
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert loaded.head_snapshot.state == make_state(1)
    with pytest.raises(CorruptCheckpointError, match="cannot be decoded") as caught:
        _ = loaded.get_snapshot(bad.snapshot_id).state
    assert str(log_of(root)) in str(caught.value)


async def test_a_head_with_an_unregistered_type_loads_and_fails_only_when_read(
    root: Path, make_state
) -> None:
    storage = FileCheckpointStorage(root)
    foreign = b'{"$type":"other_app.Invoice","$value":{"total":3}}'  # registered elsewhere
    snapshot = with_part(CheckpointSnapshot(state=make_state()).record, foreign)
    await storage.commit_snapshot(Checkpoint("run-1"), snapshot, expected_head_snapshot_id=None)
    loaded = await FileCheckpointStorage(root).load("run-1")  # e.g. an export tool
    with pytest.raises(UnregisteredStateTypeError, match=r"other_app\.Invoice"):
        _ = loaded.head_snapshot.state


async def test_instances_on_one_root_see_each_others_commits(root: Path, make_state) -> None:
    first, second = FileCheckpointStorage(root), FileCheckpointStorage(root)
    mine = await commit_chain(first, make_state, 1)
    theirs = await second.load("run-1")
    await theirs.commit_snapshot(state=make_state(1))
    await theirs.commit_snapshot(state=make_state(2))
    await mine.refresh()
    latest = await mine.commit_snapshot(state=make_state(3))
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert [s.state["workflow_state"]["n"] for s in loaded.snapshots] == [0, 1, 2, 3]
    assert loaded.head_snapshot_id == latest.snapshot_id


async def test_a_msgpack_storage_writes_a_msgpack_log(root: Path, make_state) -> None:
    checkpoint = await commit_chain(FileCheckpointStorage(root, format="msgpack"), make_state, 1)
    payloads, _ = scan(log_of(root).read_bytes(), source="test")
    assert msgspec.json.decode(payloads[0])["format"] == "msgpack"
    assert payloads[-1][:1] == b"C"  # the commit record, after the parts and their list
    assert msgspec.msgpack.decode(payloads[-1][1:])["snapshot_id"] == checkpoint.head_snapshot_id
    loaded = await FileCheckpointStorage(root, format="json").load("run-1")  # reads the log's
    assert loaded.head_snapshot.record.format == "msgpack"
    assert loaded.head_snapshot.state == make_state(0)


async def test_a_msgpack_instance_appends_to_a_json_log(root: Path, make_state) -> None:
    await commit_chain(FileCheckpointStorage(root), make_state, 1, pair=(1, 2))
    loaded = await FileCheckpointStorage(root, format="msgpack").load("run-1")
    await loaded.commit_snapshot(state=make_state(1, pair=(3, 4)))
    reloaded = await FileCheckpointStorage(root).load("run-1")
    assert [s.state for s in reloaded.snapshots] == [
        make_state(0, pair=(1, 2)),
        make_state(1, pair=(3, 4)),
    ]


async def test_prune_compacts_the_log_and_keeps_the_lock_file(root: Path, make_state) -> None:
    storage = FileCheckpointStorage(root)
    checkpoint = await commit_chain(storage, make_state, 1)
    for n in range(1, 5):  # a branch of distinct 40 kB parts, about to be pruned
        await checkpoint.commit_snapshot(state=make_state(n, big=str(n) * 40_000))
    checkpoint.restart_from(checkpoint.snapshots[0].snapshot_id)
    await checkpoint.commit_snapshot(state=make_state(9))
    before = log_of(root).stat().st_size
    removed = await storage.prune("run-1", keep=[])
    assert len(removed) == 4
    assert log_of(root).stat().st_size < before // 10  # mostly dead: rewritten
    assert (log_of(root).parent / "lock").exists()
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert [s.state["workflow_state"]["n"] for s in loaded.snapshots] == [0, 9]


async def test_delete_keeps_the_permanent_lock_file(root: Path, make_state) -> None:
    storage = FileCheckpointStorage(root)
    await commit_chain(storage, make_state, 1)
    await storage.delete("run-1")
    assert not log_of(root).exists()
    assert (log_of(root).parent / "lock").exists()


def test_an_unknown_format_is_refused(root: Path) -> None:
    with pytest.raises(ValueError, match="pickle"):
        FileCheckpointStorage(root, format="pickle")  # type: ignore[arg-type]


async def assert_memory_and_storage_agree(root: Path, checkpoint: Checkpoint, size: int) -> None:
    assert log_of(root).stat().st_size == size  # the failed record was cut off again
    reloaded = await FileCheckpointStorage(root).load("run-1")
    assert reloaded.head_snapshot_id == checkpoint.head_snapshot_id
    assert [s.snapshot_id for s in reloaded.snapshots] == [
        s.snapshot_id for s in checkpoint.snapshots
    ]


async def test_a_failing_fsync_cuts_the_record_off_and_changes_nothing(
    root: Path, make_state, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(root)
    checkpoint = await commit_chain(storage, make_state, 2)
    size = log_of(root).stat().st_size

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", failing_fsync)
        with pytest.raises(StorageUnavailableError, match="Input/output") as caught:
            await checkpoint.commit_snapshot(state=make_state(9))
    assert caught.value.errno == errno.EIO
    assert isinstance(caught.value.__cause__, OSError)
    assert len(checkpoint.snapshots) == 2
    await assert_memory_and_storage_agree(root, checkpoint, size)
    await checkpoint.commit_snapshot(state=make_state(10))  # the same objects carry on
    await assert_memory_and_storage_agree(root, checkpoint, log_of(root).stat().st_size)


@contextlib.contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """A real RLIMIT_FSIZE: writes past ``limit`` bytes fail with EFBIG (SIGXFSZ ignored)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


async def test_a_partial_write_that_hits_the_file_size_limit_is_cut_off(
    root: Path, make_state
) -> None:
    storage = FileCheckpointStorage(root)
    checkpoint = await commit_chain(storage, make_state, 2)
    size = log_of(root).stat().st_size
    with file_size_limit(size + 40), pytest.raises(StorageFullError) as caught:  # 40 B fit
        await checkpoint.commit_snapshot(state=make_state(9, notes="x" * 4096))
    assert caught.value.errno == errno.EFBIG
    assert len(checkpoint.snapshots) == 2
    await assert_memory_and_storage_agree(root, checkpoint, size)
    await checkpoint.commit_snapshot(state=make_state(10))
    await assert_memory_and_storage_agree(root, checkpoint, log_of(root).stat().st_size)
