"""File storage faults: torn tails are reported, reads work read-only, disk faults are typed."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from checkflow._fs import safe_name
from checkflow.checkpoints import Checkpoint, SnapshotHeader
from checkflow.errors import (
    StorageError,
    StorageFullError,
    StorageReadOnlyError,
    StorageUnavailableError,
)
from checkflow.sessions import AgentSession, FileSessionStore
from checkflow.storage import FileCheckpointStorage

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def log_of(root: Path, checkpoint_id: str = "c") -> Path:
    return root / safe_name(checkpoint_id) / "log"


async def committed(root: Path, make_state, count: int = 2) -> Checkpoint:
    checkpoint = Checkpoint("c", checkpoint_storage=FileCheckpointStorage(root))
    for n in range(count):
        await checkpoint.commit_snapshot(state=make_state(n))
    return checkpoint


# -- torn tails ----------------------------------------------------------------------------


async def test_loading_past_a_torn_tail_warns_naming_the_file_and_bytes(
    tmp_path: Path, make_state, caplog: pytest.LogCaptureFixture
) -> None:
    await committed(tmp_path, make_state)
    with open(log_of(tmp_path), "ab") as handle:
        handle.write(b"CFL1\x10\x00")  # a crashed append: 6 bytes of a frame header
    with caplog.at_level(logging.WARNING, logger="checkflow.storage"):
        loaded = await FileCheckpointStorage(tmp_path).load("c")
    assert len(loaded.snapshots) == 2
    (record,) = [r for r in caplog.records if r.name == "checkflow.storage"]
    assert record.levelno == logging.WARNING
    assert str(log_of(tmp_path)) in record.getMessage()
    assert "6 bytes" in record.getMessage()


async def test_the_next_commit_drops_the_torn_tail_and_warns(
    tmp_path: Path, make_state, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = await committed(tmp_path, make_state)
    size = log_of(tmp_path).stat().st_size
    with open(log_of(tmp_path), "ab") as handle:
        handle.write(b"\x00" * 24)  # zero-filled blocks a crash left behind
    fresh = await FileCheckpointStorage(tmp_path).load("c")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="checkflow.storage"):
        await fresh.commit_snapshot(state=make_state(7))
    messages = [r.getMessage() for r in caplog.records if r.name == "checkflow.storage"]
    assert any("dropping" in m and "24 bytes" in m and str(log_of(tmp_path)) in m
               for m in messages), messages
    assert log_of(tmp_path).stat().st_size > size
    assert (await FileCheckpointStorage(tmp_path).load("c")).head_snapshot_id == (
        fresh.head_snapshot_id)
    assert checkpoint.head_snapshot_id != fresh.head_snapshot_id


async def test_a_clean_load_warns_nothing(tmp_path: Path, make_state,
                                          caplog: pytest.LogCaptureFixture) -> None:
    await committed(tmp_path, make_state)
    with caplog.at_level(logging.WARNING, logger="checkflow.storage"):
        await FileCheckpointStorage(tmp_path).load("c")
    assert not [r for r in caplog.records if r.name == "checkflow.storage"]


# -- verify --------------------------------------------------------------------------------


async def test_verify_reports_the_torn_tail_bytes(tmp_path: Path, make_state) -> None:
    await committed(tmp_path, make_state)
    with open(log_of(tmp_path), "ab") as handle:
        handle.write(b"CFL1\x10")
    (report,) = await FileCheckpointStorage(tmp_path).verify()
    assert report.checkpoint_id == "c"
    assert report.torn_tail_bytes == 5
    assert report.corrupt == ()
    assert not report.ok


async def test_verify_reports_a_damaged_record_and_changes_nothing(tmp_path: Path,
                                                                   make_state) -> None:
    await committed(tmp_path, make_state, 3)
    data = bytearray(log_of(tmp_path).read_bytes())
    middle = len(data) // 2
    data[middle] ^= 0xFF
    log_of(tmp_path).write_bytes(bytes(data))
    (report,) = await FileCheckpointStorage(tmp_path).verify("c")
    assert not report.ok
    assert report.corrupt and str(log_of(tmp_path)) in report.corrupt[0]
    assert log_of(tmp_path).read_bytes() == bytes(data)


async def test_verify_reports_a_part_missing_from_the_log(tmp_path: Path, make_state) -> None:
    from checkflow.storage import _log

    await committed(tmp_path, make_state, 1)
    payloads, _ = _log.scan(log_of(tmp_path).read_bytes(), source="x")
    header = _log.decode_header(payloads[0], source="x")
    commit = _log.decode_record(payloads[-1], header.format, source="x")
    refs = _log.decode_record(payloads[-2], header.format, source="x")
    stripped = _log.CommitRecord(**{n: getattr(commit, n) for n in
                                    SnapshotHeader.__struct_fields__}, parts=refs, blobs={})
    v1_header = _log.encode_header("c", header.format, version=1)  # a log of version 1
    log_of(tmp_path).write_bytes(
        _log.frame(v1_header) + _log.frame(_log.encode_commit(stripped, header.format)))
    (report,) = await FileCheckpointStorage(tmp_path).verify("c")
    assert any("which the log does not hold" in p for p in report.corrupt), report


async def test_verify_lists_a_first_commit_that_never_completed(tmp_path: Path,
                                                                make_state) -> None:
    await committed(tmp_path, make_state, 1)
    data = log_of(tmp_path).read_bytes()
    broken = tmp_path / safe_name("half") / "log"
    broken.parent.mkdir()
    from checkflow.storage import _log

    header = _log.frame(_log.encode_header("half", "json"))
    first_commit = _log.frame(_log.scan(data, source="x")[0][1])
    broken.write_bytes(header + first_commit[:20])  # the first commit, torn
    reports = {r.checkpoint_id: r for r in await FileCheckpointStorage(tmp_path).verify()}
    assert reports["c"].ok
    assert not reports["half"].ok and reports["half"].torn_tail_bytes == 20


# -- reads on a read-only store ------------------------------------------------------------


@pytest.fixture
def opened_flags(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every ``os.open`` while the test runs: (path, flags)."""
    calls: list[tuple[str, int]] = []
    real_open = os.open

    def recording_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        calls.append((str(path), flags))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    return calls


async def test_loading_and_listing_open_nothing_for_writing(
    tmp_path: Path, make_state, opened_flags: list[tuple[str, int]]
) -> None:
    await committed(tmp_path, make_state)
    opened_flags.clear()
    storage = FileCheckpointStorage(tmp_path)
    await storage.load("c")
    await storage.list_checkpoint_ids()
    await storage.verify()
    assert opened_flags, "the seam saw no open at all"
    assert [(p, f) for p, f in opened_flags if f & WRITE_FLAGS] == []


async def test_a_store_without_a_lock_file_still_loads(tmp_path: Path, make_state) -> None:
    await committed(tmp_path, make_state)
    (log_of(tmp_path).parent / "lock").unlink()
    loaded = await FileCheckpointStorage(tmp_path).load("c")
    assert len(loaded.snapshots) == 2
    assert not (log_of(tmp_path).parent / "lock").exists()  # a read never creates it


async def test_session_reads_open_nothing_for_writing(
    tmp_path: Path, opened_flags: list[tuple[str, int]]
) -> None:
    store = FileSessionStore(tmp_path)
    await store.set(AgentSession(session_id="s", state={"x": 1}))
    opened_flags.clear()
    session = await store.get("s")
    assert session is not None and session.state == {"x": 1}
    assert [(p, f) for p, f in opened_flags if f & WRITE_FLAGS] == []


def _can_bind_read_only(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    result = subprocess.run(
        ["unshare", "-rm", "sh", "-c", 'mount --bind -o ro "$1" "$1" && ! touch "$1/x"', "sh",
         str(probe)],
        capture_output=True, timeout=30, check=False,
    )
    return result.returncode == 0


async def test_a_read_only_mounted_store_reads_and_refuses_writes_typed(
    tmp_path: Path, make_state
) -> None:
    if not _can_bind_read_only(tmp_path):
        pytest.skip("no unprivileged mount namespace to make a read-only bind mount in")
    root = tmp_path / "store"
    checkpoint = await committed(root / "checkpoints", make_state)
    await FileSessionStore(root / "sessions").set(AgentSession(session_id="s", state={"x": 1}))
    (log_of(root / "checkpoints").parent / "lock").unlink()  # reads must not need to create it
    child = Path(__file__).with_name("readonly_child.py")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    result = subprocess.run(
        ["unshare", "-rm", "sh", "-c", 'mount --bind -o ro "$1" "$1" && exec "$2" "$3" "$1"',
         "sh", str(root), sys.executable, str(child)],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["head_n"] == 1
    assert found["ids"] == ["c"]
    assert found["verify_ok"] == [True]
    assert found["session"] == {"x": 1}
    assert found["commit_error"] == ["StorageReadOnlyError", errno.EROFS, "checkpoint commit"]
    assert found["create_error"] == "StorageReadOnlyError"
    assert found["session_error"] == ["StorageReadOnlyError", "session write"]
    assert checkpoint.head_snapshot_id == (await FileCheckpointStorage(
        root / "checkpoints").load("c")).head_snapshot_id


# -- typed faults ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "kind"),
    [(errno.ENOSPC, StorageFullError), (errno.EDQUOT, StorageFullError),
     (errno.EFBIG, StorageFullError), (errno.EROFS, StorageReadOnlyError),
     (errno.EIO, StorageUnavailableError), (errno.EACCES, StorageUnavailableError)],
)
def test_os_errors_map_to_typed_storage_errors(code: int, kind: type[StorageError]) -> None:
    error = StorageError.from_os_error(OSError(code, os.strerror(code)), operation="commit",
                                       resource="/data/x")
    assert type(error) is kind
    assert error.errno == code and error.operation == "commit" and error.resource == "/data/x"
    assert "commit failed on /data/x" in str(error) and os.strerror(code) in str(error)


async def test_a_session_write_that_fails_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path)
    await store.set(AgentSession(session_id="s", state={"x": 1}))

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", no_space)
        patched.setattr(os, "fdatasync", no_space)  # the flush of a slot written in place
        with pytest.raises(StorageFullError, match="session write failed") as caught:
            await store.set(AgentSession(session_id="s", state={"x": 2}))
    assert caught.value.resource == str(store.path_for("s"))
    session = await store.get("s")
    assert session is not None and session.state == {"x": 1}  # the slot was put back
