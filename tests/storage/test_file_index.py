"""The file log's index: loads read the head and what is new, older parts lazily, v1 still loads."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

from checkflow._fs import safe_name
from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.errors import CorruptCheckpointError
from checkflow.storage import FileCheckpointStorage, _log


def log_of(root: Path, checkpoint_id: str = "c") -> Path:
    return root / safe_name(checkpoint_id) / "log"


@pytest.fixture
def bytes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many bytes ``os.pread`` returned while the test runs (reset it to start counting)."""
    counted: list[int] = [0]
    real = os.pread

    def counting(fd: int, length: int, offset: int) -> bytes:
        data = real(fd, length, offset)
        counted[0] += len(data)
        return data

    monkeypatch.setattr(os, "pread", counting)
    return counted


async def grown(root: Path, make_state, count: int, size: int = 20_000) -> Checkpoint:
    """``count`` snapshots, each with a distinct part of ``size`` bytes."""
    checkpoint = Checkpoint("c", checkpoint_storage=FileCheckpointStorage(root))
    for n in range(count):
        await checkpoint.commit_snapshot(state=make_state(n, blob=f"{n:04}" * (size // 4)))
    return checkpoint


async def test_a_load_reads_the_head_not_the_history(tmp_path: Path, make_state,
                                                     bytes_read: list[int]) -> None:
    await grown(tmp_path, make_state, 40)
    size = log_of(tmp_path).stat().st_size
    bytes_read[0] = 0
    loaded = await FileCheckpointStorage(tmp_path).load("c")
    assert len(loaded.snapshots) == 40
    assert bytes_read[0] < size // 10, (bytes_read[0], size)
    assert loaded.head_snapshot is not None
    assert loaded.head_snapshot.state["workflow_state"]["n"] == 39


async def test_older_snapshots_are_read_when_their_state_is(tmp_path: Path, make_state,
                                                            bytes_read: list[int]) -> None:
    await grown(tmp_path, make_state, 10)
    loaded = await FileCheckpointStorage(tmp_path).load("c")
    bytes_read[0] = 0
    first = loaded.snapshots[0]
    assert first.parent_snapshot_id is None and first.metadata == {}  # header only
    assert bytes_read[0] == 0
    assert first.state["workflow_state"]["n"] == 0
    assert 20_000 <= bytes_read[0] < 30_000
    assert first == (await FileCheckpointStorage(tmp_path).load("c")).snapshots[0]


async def test_a_second_load_reads_only_what_was_appended(tmp_path: Path, make_state,
                                                          bytes_read: list[int]) -> None:
    await grown(tmp_path, make_state, 30)
    reader = FileCheckpointStorage(tmp_path)
    await reader.load("c")
    writer = await FileCheckpointStorage(tmp_path).load("c")
    await writer.commit_snapshot(state=make_state(99, blob="tiny"))
    bytes_read[0] = 0
    again = await reader.load("c")
    assert again.head_snapshot_id == writer.head_snapshot_id
    assert bytes_read[0] < 5_000, bytes_read[0]


async def test_a_snapshot_read_after_another_instance_compacted_the_log(
    tmp_path: Path, make_state
) -> None:
    checkpoint = await grown(tmp_path, make_state, 1)
    root = checkpoint.snapshots[0]
    for n in range(1, 6):
        await checkpoint.commit_snapshot(state=make_state(n, blob=str(n) * 40_000))
    doomed = checkpoint.snapshots[1]
    checkpoint.restart_from(root.snapshot_id)
    await checkpoint.commit_snapshot(state=make_state(9))
    early = await FileCheckpointStorage(tmp_path).load("c")  # indexed before the compaction
    inode = log_of(tmp_path).stat().st_ino
    await FileCheckpointStorage(tmp_path).prune("c", keep=[])
    assert log_of(tmp_path).stat().st_ino != inode  # rewritten: most of it was dead
    assert early.get_snapshot(root.snapshot_id).state["workflow_state"]["n"] == 0
    with pytest.raises(CorruptCheckpointError, match="no longer in the log"):
        _ = early.get_snapshot(doomed.snapshot_id).state


async def test_a_small_prune_appends_a_record_and_keeps_the_log(tmp_path: Path,
                                                                make_state) -> None:
    checkpoint = Checkpoint("c", checkpoint_storage=FileCheckpointStorage(tmp_path))
    root = await checkpoint.commit_snapshot(state=make_state(0))
    doomed = await checkpoint.commit_snapshot(state=make_state(1))
    checkpoint.restart_from(root.snapshot_id)
    await checkpoint.commit_snapshot(state=make_state(2))
    inode = log_of(tmp_path).stat().st_ino
    assert await FileCheckpointStorage(tmp_path).prune("c", keep=[]) == [doomed.snapshot_id]
    assert log_of(tmp_path).stat().st_ino == inode
    payloads, _ = _log.scan(log_of(tmp_path).read_bytes(), source="t")
    assert payloads[-1][:1] == _log.PRUNE
    reloaded = await FileCheckpointStorage(tmp_path).load("c")
    assert doomed.snapshot_id not in {s.snapshot_id for s in reloaded.snapshots}
    later = await reloaded.commit_snapshot(state=make_state(3))
    assert (await FileCheckpointStorage(tmp_path).load("c")).head_snapshot_id == later.snapshot_id


async def test_records_of_a_commit_that_never_completed_are_ignored_then_dropped(
    tmp_path: Path, make_state, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = await grown(tmp_path, make_state, 2, size=100)
    size = log_of(tmp_path).stat().st_size
    with open(log_of(tmp_path), "ab") as handle:  # parts and part list, no commit record
        handle.write(_log.frame(_log.blob_payload("0" * 32, b'"orphan"')))
        handle.write(_log.frame(_log.refs_payload({"workflow_state": {"n": "0" * 32}}, "json")))
    with caplog.at_level(logging.WARNING, logger="checkflow.storage"):
        loaded = await FileCheckpointStorage(tmp_path).load("c")
    assert loaded.head_snapshot_id == checkpoint.head_snapshot_id
    assert any("ignoring" in r.getMessage() for r in caplog.records)
    (report,) = await FileCheckpointStorage(tmp_path).verify("c")
    assert report.torn_tail_bytes == log_of(tmp_path).stat().st_size - size
    await loaded.commit_snapshot(state=make_state(5))
    assert (await FileCheckpointStorage(tmp_path).verify("c"))[0].ok


def version_1_log(checkpoint_id: str, snapshots: list[CheckpointSnapshot]) -> bytes:
    """A log as release 1 of the format wrote it: one record per commit, parts inline."""
    import hashlib

    chunks = [_log.frame(_log.encode_header(checkpoint_id, "json", version=1))]
    known: set[str] = set()
    for snapshot in snapshots:
        record = snapshot.record
        refs: dict[str, dict[str, str]] = {}
        blobs: dict[str, Any] = {}
        for bucket, values in record.parts.items():
            refs[bucket] = {}
            for key, data in values.items():
                digest = refs[bucket][key] = hashlib.blake2b(data, digest_size=16).hexdigest()
                if digest not in known:
                    known.add(digest)
                    blobs[digest] = msgspec.Raw(data)
        commit = _log.CommitRecord(**record.header(), parts=refs, blobs=blobs)
        chunks.append(_log.frame(_log.encode_commit(commit, "json")))
    return b"".join(chunks)


async def test_a_version_1_log_loads_and_is_rewritten_on_the_first_write(
    tmp_path: Path, make_state
) -> None:
    memory = Checkpoint("c")
    for n in range(3):
        await memory.commit_snapshot(state=make_state(n, pair=(n, n)))
    log_of(tmp_path).parent.mkdir(parents=True)
    log_of(tmp_path).write_bytes(version_1_log("c", memory.snapshots))
    assert await FileCheckpointStorage(tmp_path).list_checkpoint_ids() == ["c"]
    loaded = await FileCheckpointStorage(tmp_path).load("c")
    assert [s.state for s in loaded.snapshots] == [s.state for s in memory.snapshots]
    assert (await FileCheckpointStorage(tmp_path).verify("c"))[0].ok
    later = await loaded.commit_snapshot(state=make_state(3))
    payloads, _ = _log.scan(log_of(tmp_path).read_bytes(), source="t")
    assert msgspec.json.decode(payloads[0])["version"] == 2
    reloaded = await FileCheckpointStorage(tmp_path).load("c")
    assert [s.snapshot_id for s in reloaded.snapshots] == [
        *(s.snapshot_id for s in memory.snapshots), later.snapshot_id]
    assert reloaded.snapshots[1].state == memory.snapshots[1].state


async def test_the_writing_instance_loads_its_head_without_reading_it_back(
    tmp_path: Path, make_state, bytes_read: list[int]
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    checkpoint = await grown(tmp_path, make_state, 3)
    writer = await storage.load("c")
    head = await writer.commit_snapshot(state=make_state(7, blob="z" * 50_000))
    bytes_read[0] = 0
    again = await storage.load("c")
    assert again.head_snapshot == head
    assert bytes_read[0] < 1_000, bytes_read[0]
    assert checkpoint.head_snapshot_id != head.snapshot_id


async def test_only_the_head_keeps_its_parts_in_the_index(tmp_path: Path, make_state) -> None:
    storage = FileCheckpointStorage(tmp_path)
    checkpoint = Checkpoint("c", checkpoint_storage=storage)
    for n in range(5):
        await checkpoint.commit_snapshot(state=make_state(n))
    await storage.load("c")
    index = storage._indexes.get("c")
    assert index is not None
    kept = [sid for sid, entry in index.commits.items() if entry.snapshot is not None]
    assert kept == [checkpoint.head_snapshot_id]
