"""The two-slot session file: where each write goes, what a crash can leave, and files of
envelope version 1 (written by earlier releases) read and converted.

The crash model is the page cache's: since a file's last sync, each block on disk may hold
any version written to it since (blocks reach the disk in any order, each whenever the
kernel likes). A reader must then find the last durable record or one written after it,
never a torn one and never an older one.
"""

from __future__ import annotations

import asyncio
import errno
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkflow.agents import ChatMessage
from checkflow.errors import CorruptSessionError, SessionConflictError, StorageError
from checkflow.sessions import AgentSession, FileSessionStore, _file
from checkflow.sessions._slots import HEAD_SIZE, MAGIC, pack, read_slots

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "sessions_v1" / "store"
BLOCK = 64  # finer than any disk's sector: a harsher model than the real one


def _slots(store: FileSessionStore, session_id: str = "s") -> Any:
    return read_slots(store.path_for(session_id).read_bytes())


async def _two_records(root: Path, *, durable: bool) -> tuple[FileSessionStore, AgentSession]:
    """A store whose session "s" was created as ``{"n": 0}`` (slot 0), then written as
    ``{"n": 1}`` (slot 1, the newest record)."""
    store = FileSessionStore(root)
    session = AgentSession("s", {"n": 0})
    await store.set(session, create=True)
    session.state["n"] = 1
    await store.set(session, expected_version=session.version, durable=durable)
    return store, session


def _torn(data: bytes, slot: int) -> bytes:
    """``data`` with one byte of ``slot``'s record flipped: its checksum fails."""
    damaged = bytearray(data)
    damaged[slot * len(data) // 2 + 40] ^= 0xFF
    return bytes(damaged)


async def test_writes_never_overwrite_the_newest_durable_record(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession("s", {"n": 0})
    await store.set(session, create=True)
    first = _slots(store)
    assert first.newest.slot == 0 and first.newest.durable and first.target == 1
    steps = [(False, 1), (True, 1), (False, 0), (False, 0), (True, 0), (True, 1)]
    for n, (durable, slot) in enumerate(steps, start=1):
        session.state["n"] = n
        await store.set(session, expected_version=session.version, durable=durable)
        slots = _slots(store)
        assert (slots.newest.slot, slots.newest.durable) == (slot, durable), n
        assert slots.newest.sequence == n + 1
        assert (await FileSessionStore(tmp_path).get("s")).state == {"n": n}


async def test_a_record_that_outgrows_its_slot_makes_the_file_whole_again(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession("s", {"text": "x"})
    await store.set(session, create=True)
    small = store.path_for("s").stat().st_size
    session.state["text"] = "x" * 20_000
    await store.set(session, expected_version=session.version, durable=False)
    grown = _slots(store)
    assert grown.slot_size * 2 > small and grown.newest.slot == 0 and grown.newest.durable
    session.state["text"] = "y" * 20_000
    await store.set(session, expected_version=session.version)
    assert _slots(store).newest.slot == 1  # in place again
    assert (await FileSessionStore(tmp_path).get("s")).state == {"text": "y" * 20_000}


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
async def test_a_version_1_file_reads_and_its_next_write_makes_it_two_slots(
    tmp_path: Path, fmt: str
) -> None:
    root = tmp_path / fmt
    shutil.copytree(FIXTURE / fmt, root)
    revision = (root / "revision.txt").read_text().strip()
    store = FileSessionStore(root, format=fmt)  # type: ignore[arg-type]
    assert store.path_for("conv").read_bytes()[:1] in (b"{", b"\x85")  # the old layout
    old = await store.get("conv")
    assert old is not None and old.version == revision
    assert old.state == {"messages": [ChatMessage("user", "hi")], "pair": (1, "two")}
    assert await store.list_session_ids() == ["conv"]
    with pytest.raises(SessionConflictError):
        await store.set(AgentSession("conv"), expected_version="not-the-revision")
    old.state["pair"] = (2, "three")
    await store.set(old, expected_version=revision, durable=False)
    assert store.path_for("conv").read_bytes()[:4] == MAGIC
    again = await FileSessionStore(root).get("conv")
    assert again is not None and again.state["pair"] == (2, "three")
    assert again.version == old.version != revision


async def test_a_file_with_no_intact_record_is_corrupt_and_an_unconditional_write_heals_it(
    tmp_path: Path,
) -> None:
    store = FileSessionStore(tmp_path)
    await store.set(AgentSession("s", {"n": 0}), create=True)
    path = store.path_for("s")
    path.write_bytes(_torn(path.read_bytes(), 0))  # slot 1 was never written
    with pytest.raises(CorruptSessionError, match="no intact record") as caught:
        await store.get("s")
    assert caught.value.source == str(path)
    with pytest.raises(CorruptSessionError):
        await store.set(AgentSession("s"), expected_version="anything")
    await store.set(AgentSession("s", {"n": 1}))
    assert (await store.get("s")).state == {"n": 1}


async def test_a_version_1_file_converted_by_a_lease_reads_as_two_slots(tmp_path: Path) -> None:
    root = tmp_path / "json"
    shutil.copytree(FIXTURE / "json", root)
    store = FileSessionStore(root)
    old = await store.get("conv")
    assert old is not None
    await store.set(old, expected_version=old.version, durable=False)  # made whole
    await store.set(old, expected_version=old.version)  # then in place
    assert _slots(store, "conv").newest.slot == 1


async def test_a_damaged_first_byte_never_passes_a_two_slot_file_off_as_version_1(
    tmp_path: Path,
) -> None:
    store, _ = await _two_records(tmp_path, durable=True)
    path = store.path_for("s")
    data = bytearray(path.read_bytes())
    data[0] = ord("{")  # slot 0 torn into what looks like a JSON envelope's start
    path.write_bytes(bytes(data))
    loaded = await store.get("s")
    assert loaded is not None and loaded.state == {"n": 1}
    await store.set(loaded, expected_version=loaded.version)  # and writes go on


def test_with_no_durable_record_intact_a_write_spares_the_newest_intact_one() -> None:
    slot = 4096
    lease = pack(b"lease", 7, durable=False)
    data = bytearray(2 * slot)
    data[:4] = MAGIC  # slot 0: a torn record (its head names nothing intact)
    data[slot:slot + len(lease)] = lease
    slots = read_slots(bytes(data))
    assert slots.torn and slots.newest is not None and slots.newest.payload == b"lease"
    assert slots.target == 0


def test_a_file_that_is_not_two_whole_slots_is_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="whole pages in two halves; this one is 5000 bytes"):
        read_slots(MAGIC + bytes(4996))


@pytest.fixture
def first_read() -> Iterator[threading.Event]:
    """Set once a reader has read a file for the first time (it then goes on)."""
    done = threading.Event()
    real = _file._read_or_none

    def reading(path: Path) -> bytes | None:
        data = real(path)
        done.set()
        return data

    with mock.patch.object(_file, "_read_or_none", reading):
        yield done


async def test_a_reader_meeting_a_slot_mid_write_reads_again_once_the_writer_is_done(
    tmp_path: Path, first_read: threading.Event
) -> None:
    from tests.sessions.test_session_write_path import HeldLock

    store, _ = await _two_records(tmp_path, durable=False)
    path = store.path_for("s")
    whole = path.read_bytes()
    held = HeldLock(tmp_path / ".lock", "s")  # "another process" is rewriting slot 1
    try:
        path.write_bytes(_torn(whole, 1))
        reading = asyncio.ensure_future(store.get("s"))
        assert await asyncio.to_thread(first_read.wait, 10)
        path.write_bytes(whole)  # the writer finishes (here: slot 1 as it was) and unlocks
    finally:
        held.release()
    loaded = await asyncio.wait_for(reading, 10)
    assert loaded is not None and loaded.state == {"n": 1}  # not slot 0's older {"n": 0}


async def test_a_failed_write_is_not_read_even_when_its_slot_cannot_be_put_back(
    tmp_path: Path,
) -> None:
    store, session = await _two_records(tmp_path, durable=True)
    real, calls = _file.write_at, []

    def failing(fd: int, data: bytes, offset: int, *, sync: bool) -> None:
        calls.append(len(data))
        if len(calls) == 1:  # the record lands in the page cache, then its flush fails
            real(fd, data, offset, sync=False)
            raise OSError(errno.EIO, "Input/output error")
        if len(calls) == 2:  # putting the old bytes back fails too
            raise OSError(errno.EIO, "Input/output error")
        real(fd, data, offset, sync=sync)  # the head is zeroed

    session.state["n"] = 2
    with mock.patch.object(_file, "write_at", failing), pytest.raises(StorageError):
        await store.set(session, expected_version=session.version)
    assert calls[2] == HEAD_SIZE
    loaded = await FileSessionStore(tmp_path).get("s")
    assert loaded is not None and loaded.state == {"n": 1}


async def test_a_torn_slot_on_a_store_that_cannot_be_locked_reads_the_other_slot(
    tmp_path: Path,
) -> None:
    store, _ = await _two_records(tmp_path, durable=False)
    path = store.path_for("s")
    path.write_bytes(_torn(path.read_bytes(), 1))
    (tmp_path / ".lock").unlink()  # a copy without its lock file: a reader creates nothing
    loaded = await store.get("s")
    assert loaded is not None and loaded.state == {"n": 0}
    assert not (tmp_path / ".lock").exists()


class _Disk:
    """The blocks of one file as a crash may leave them: each block any version written
    since the file's last sync."""

    def __init__(self, image: bytes) -> None:
        self.image = bytearray(image)
        self.since_sync: dict[int, list[bytes]] = {}

    def write(self, offset: int, data: bytes, *, sync: bool) -> None:
        end = offset + len(data)
        for block in range(offset // BLOCK, -(-end // BLOCK)):
            self.since_sync.setdefault(block, [self._block(block)])
        self.image[offset:end] = data
        for block in range(offset // BLOCK, -(-end // BLOCK)):
            self.since_sync[block].append(self._block(block))
        if sync:
            self.since_sync.clear()

    def _block(self, block: int) -> bytes:
        return bytes(self.image[block * BLOCK:(block + 1) * BLOCK])

    def crashed(self, choose: Any) -> bytes:
        image = bytearray(self.image)
        for block, versions in sorted(self.since_sync.items()):
            image[block * BLOCK:(block + 1) * BLOCK] = versions[choose(len(versions))]
        return bytes(image)


@given(durable=st.lists(st.booleans(), min_size=1, max_size=8), in_flight=st.booleans(),
       data=st.data())
def test_after_a_crash_the_last_durable_record_or_a_later_one_is_read(
    durable: list[bool], in_flight: bool, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_crash_case(Path(folder), durable, in_flight, data))


async def _crash_case(root: Path, durable: list[bool], in_flight: bool,
                      data: st.DataObject) -> None:
    store = FileSessionStore(root)
    session = AgentSession("s", {"n": -1, "pad": "p" * 150})
    await store.set(session, create=True)
    disk = _Disk(store.path_for("s").read_bytes())
    revisions = [session.version]
    real_write_at = _file.write_at

    def recorded(fd: int, payload: bytes, offset: int, *, sync: bool) -> None:
        real_write_at(fd, payload, offset, sync=sync)
        calls.append(offset)
        # the last write may be in flight: its sync never completed
        disk.write(offset, payload, sync=sync and not (in_flight and last[0]))

    last, calls = [False], []
    acknowledged = 0  # index in revisions of the newest record that must survive
    with mock.patch.object(_file, "write_at", recorded):
        for n, flag in enumerate(durable):
            last[0] = n == len(durable) - 1
            session.state["n"] = n
            await store.set(session, expected_version=session.version, durable=flag)
            revisions.append(session.version)
            if flag and not (in_flight and last[0]):
                acknowledged = n + 1
    path = store.path_for("s")
    assert len(calls) == len(durable)  # every write went in place (none made the file again)
    assert path.read_bytes() == bytes(disk.image)
    path.write_bytes(disk.crashed(lambda k: data.draw(st.integers(0, k - 1))))
    loaded = await FileSessionStore(root).get("s")
    assert loaded is not None
    assert loaded.version in revisions[acknowledged:]
    assert loaded.state["n"] == revisions.index(loaded.version) - 1
