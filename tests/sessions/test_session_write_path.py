"""The file session store's write path: per-session locks and what each write syncs.

Locks are shown with deterministic gates: a thread holds one session's lock (as another
process would) until the test releases it; nothing sleeps to make writes overlap.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checkflow import _fs
from checkflow.errors import SessionConflictError
from checkflow.sessions import AgentSession, FileSessionStore
from checkflow.sessions import _file as session_file
from checkflow.sessions._versions import new_version
from tests.forked import in_forked_child

pytestmark = pytest.mark.skipif(not hasattr(fcntl, "F_OFD_SETLK"),
                                reason="per-key locks need open-file-description locks")


class HeldLock:
    """``key_lock(path, key)`` held in a thread of its own until ``release()``."""

    def __init__(self, path: Path, key: str) -> None:
        self.entered, self._release = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._hold, args=(path, key))
        self._thread.start()
        assert self.entered.wait(10)

    def _hold(self, path: Path, key: str) -> None:
        with _fs.key_lock(path, key):
            self.entered.set()
            self._release.wait(10)

    def release(self) -> None:
        self._release.set()
        self._thread.join(10)


def _try_lock(path: Path, key: str) -> bool:
    """Whether ``key`` could be locked right now by another open of the file (no waiting)."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    offset = int.from_bytes(digest, "big") >> 2
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, offset, 1, 0))
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_a_key_lock_excludes_that_key_only(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    held = HeldLock(lock, "a")
    try:
        assert not _try_lock(lock, "a")  # another open file (another process) must wait
        assert _try_lock(lock, "b")
    finally:
        held.release()
    assert _try_lock(lock, "a")


async def test_a_write_waits_only_for_its_own_session(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    await store.set(AgentSession("a", {"n": 0}))
    held = HeldLock(tmp_path / ".lock", "a")  # a writer of session a elsewhere, mid-write
    try:
        other = await asyncio.wait_for(store.set(AgentSession("b", {"n": 1})), 10)
        assert (await store.get("b")).version == other  # b never waited for a's lock
        blocked = asyncio.ensure_future(store.set(AgentSession("a", {"n": 2})))
        await asyncio.wait_for(store.set(AgentSession("c", {"n": 3})), 10)
        assert not blocked.done()  # a's lock is still held: a's write cannot have happened
        assert (await store.get("a")).state == {"n": 0}
    finally:
        held.release()
    await asyncio.wait_for(blocked, 10)
    assert (await store.get("a")).state == {"n": 2}


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """What each write synced, in order: "file" (fsync), "data" (fdatasync: a slot written in
    place) or "dir" (the real syncs still run)."""
    seen: list[str] = []
    real_fsync, real_fdatasync, real_dir = os.fsync, os.fdatasync, _fs.fsync_directory
    in_dir = threading.local()

    def fsync(fd: int) -> None:
        if not getattr(in_dir, "on", False):
            seen.append("file")
        real_fsync(fd)

    def fdatasync(fd: int) -> None:
        seen.append("data")
        real_fdatasync(fd)

    def fsync_directory(path: Path) -> None:
        seen.append("dir")
        in_dir.on = True
        try:
            real_dir(path)
        finally:
            in_dir.on = False

    monkeypatch.setattr(_fs.os, "fsync", fsync)
    monkeypatch.setattr(_fs.os, "fdatasync", fdatasync)
    monkeypatch.setattr(_fs, "fsync_directory", fsync_directory)
    monkeypatch.setattr(session_file, "fsync_directory", fsync_directory)  # (a delete's)
    yield seen


async def test_a_lease_write_syncs_nothing_an_outcome_one_slot_and_a_create_file_and_folder(
    tmp_path: Path, syncs: list[str]
) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession("s", {"n": 0})
    await store.set(session, create=True, durable=False)  # a create is always durable
    assert syncs == ["file", "dir"]
    syncs.clear()
    session.state["n"] = 1
    await store.set(session, expected_version=session.version, durable=False)
    assert syncs == []  # written in place into the slot the last durable record is not in
    assert (await FileSessionStore(tmp_path).get("s")).state == {"n": 1}
    session.state["n"] = 2
    await store.set(session, expected_version=session.version)
    assert syncs == ["data"]  # one flush of that slot: no temporary file, rename or folder
    assert (await FileSessionStore(tmp_path).get("s")).state == {"n": 2}


async def test_an_unsynced_write_still_checks_its_condition(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession("s", {"n": 0})
    first = await store.set(session)
    await store.set(AgentSession("s", {"n": 1}), expected_version=first, durable=False)
    with pytest.raises(SessionConflictError):
        await store.set(AgentSession("s", {"n": 2}), expected_version=first, durable=False)
    with pytest.raises(SessionConflictError):
        await store.set(AgentSession("s", {"n": 3}), create=True, durable=False)
    assert (await store.get("s")).state == {"n": 1}


def test_versions_never_repeat_in_a_process_or_in_its_forked_children() -> None:
    theirs = in_forked_child(new_version)
    ours = [new_version() for _ in range(1000)]
    assert len(set(ours)) == 1000
    assert theirs not in ours and theirs[:16] != ours[0][:16]  # a fork draws a new prefix


async def test_the_first_write_creates_the_folder_and_a_removed_folder_is_made_again(
    tmp_path: Path,
) -> None:
    root = tmp_path / "nested" / "sessions"
    store = FileSessionStore(root)
    assert await store.get("s") is None and not root.exists()  # a read creates nothing
    await store.set(AgentSession("s", {"n": 0}), create=True)
    assert sorted(p.name for p in root.iterdir()) == [".lock", store.path_for("s").name]
    for path in root.iterdir():
        path.unlink()
    root.rmdir()  # an operator removed the folder while the store was in use
    await store.set(AgentSession("t", {"n": 1}), create=True)
    assert (await FileSessionStore(root).get("t")).state == {"n": 1}
    assert await store.get("s") is None



async def test_a_first_write_still_lands_when_another_made_the_folder_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    real = FileSessionStore._write_locked
    attempts: list[int] = []

    def racing(self: FileSessionStore, *args: Any) -> str:
        attempts.append(1)
        if len(attempts) > 1:
            return real(self, *args)
        try:
            return real(self, *args)  # no folder yet: FileNotFoundError
        finally:
            root.mkdir()  # ... and another writer's thread makes the folder before we look

    monkeypatch.setattr(FileSessionStore, "_write_locked", racing)
    store = FileSessionStore(root)
    await store.set(AgentSession("s", {"n": 1}), create=True)
    assert len(attempts) == 2
    assert (await FileSessionStore(root).get("s")).state == {"n": 1}


async def test_a_file_made_whole_is_always_synced_with_its_folder(
    tmp_path: Path, syncs: list[str]
) -> None:
    """Later writes go in place with a data flush only, which would not make the file's name
    durable: so a write that makes the file whole syncs its folder even for a lease."""
    store = FileSessionStore(tmp_path)
    await store.set(AgentSession("blind", {"n": 0}), durable=False)  # no file yet
    assert syncs == ["file", "dir"]
    syncs.clear()
    session = AgentSession("s", {"text": "x"})
    await store.set(session, create=True)
    syncs.clear()
    session.state["text"] = "x" * 20_000  # outgrows its slot
    await store.set(session, expected_version=session.version, durable=False)
    assert syncs == ["file", "dir"]


async def test_a_delete_syncs_the_folder_and_a_missing_session_syncs_nothing(
    tmp_path: Path, syncs: list[str]
) -> None:
    store = FileSessionStore(tmp_path)
    await store.set(AgentSession("s", {"n": 0}), create=True)
    syncs.clear()
    await store.delete("s")
    assert syncs == ["dir"]  # a deleted session must not come back after a crash
    syncs.clear()
    await store.delete("s")
    assert syncs == []
    assert await store.get("s") is None


def test_a_shared_key_lock_admits_readers_excludes_writers_and_creates_nothing(
    tmp_path: Path,
) -> None:
    lock = tmp_path / ".lock"
    with pytest.raises(FileNotFoundError), _fs.key_lock(lock, "a", shared=True):
        pass
    assert not lock.exists()
    lock.touch()
    with _fs.key_lock(lock, "a", shared=True), _fs.key_lock(lock, "a", shared=True):
        assert not _try_lock(lock, "a")  # a writer of "a" must wait for the readers
        assert _try_lock(lock, "b")
    assert _try_lock(lock, "a")
