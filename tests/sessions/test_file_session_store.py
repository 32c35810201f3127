"""FileSessionStore specifics: the envelope on disk, corrupt files, formats, cross-process CAS."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path

import msgspec
import pytest

from checkflow.agents import ChatMessage
from checkflow.errors import CorruptSessionError, SessionConflictError
from checkflow.sessions import AgentSession, FileSessionStore
from checkflow.sessions._slots import new_file, read_slots


async def _stored(tmp_path: Path, *, format: str = "json") -> tuple[FileSessionStore, Path]:
    store = FileSessionStore(tmp_path, format=format)  # type: ignore[arg-type]
    await store.set(AgentSession("conv", {"messages": [ChatMessage("user", "hi")]}))
    return store, store.path_for("conv")


def _envelope(path: Path) -> bytes:
    """The envelope the file's newest record holds (the file is two slots)."""
    newest = read_slots(path.read_bytes()).newest
    assert newest is not None
    return newest.payload


async def test_json_file_is_a_versioned_envelope_holding_the_original_id(tmp_path: Path) -> None:
    store, path = await _stored(tmp_path)
    envelope = msgspec.json.decode(_envelope(path))
    assert envelope["format"] == "checkflow.session"
    assert envelope["version"] == 1
    assert envelope["session_id"] == "conv"
    assert envelope["revision"] == (await store.get("conv")).version
    assert envelope["session"]["$type"] == "checkflow.AgentSession"


async def test_msgpack_store_writes_msgpack(tmp_path: Path) -> None:
    _, path = await _stored(tmp_path, format="msgpack")
    envelope = msgspec.msgpack.decode(_envelope(path))
    assert envelope["format"] == "checkflow.session"
    assert envelope["session_id"] == "conv"


async def test_a_store_reads_files_written_in_the_other_format(tmp_path: Path) -> None:
    await _stored(tmp_path, format="msgpack")
    loaded = await FileSessionStore(tmp_path, format="json").get("conv")
    assert loaded is not None and loaded.state["messages"] == [ChatMessage("user", "hi")]


@pytest.mark.parametrize("session_id", ["../escape", "a/b/c", "/etc/passwd", "y" * 300])
async def test_odd_ids_stay_inside_the_root_under_hashed_names(
    tmp_path: Path, session_id: str
) -> None:
    root = tmp_path / "root"
    store = FileSessionStore(root)
    await store.set(AgentSession(session_id))
    files = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert files == sorted([".lock", store.path_for(session_id).name])
    assert store.path_for(session_id).parent == root
    assert len(store.path_for(session_id).name) < 64


async def test_no_temporary_files_are_left_behind(tmp_path: Path) -> None:
    store, _ = await _stored(tmp_path)
    for n in range(3):
        await store.set(AgentSession("conv", {"n": n}))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".lock", store.path_for("conv").name]
    )


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: b"\x00\xff garbage", id="garbage"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: data.replace(b'"revision"', b'"revisiom"'), id="missing-field"),
        pytest.param(
            lambda data: data.replace(b"checkflow.AgentSession", b"checkflow.AgentSessiox"),
            id="unknown-type-inside",
        ),
    ],
)
async def test_a_damaged_file_raises_corrupt_session_error_naming_the_file(
    tmp_path: Path, damage: object
) -> None:
    store, path = await _stored(tmp_path)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(CorruptSessionError) as caught:
        await store.get("conv")
    assert caught.value.source == str(path)
    assert str(path) in str(caught.value)


async def test_a_bit_flipped_msgpack_file_raises_corrupt_session_error(tmp_path: Path) -> None:
    store, path = await _stored(tmp_path, format="msgpack")
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF  # the map header: no longer a map
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptSessionError, match="session"):
        await store.get("conv")


async def test_an_unknown_envelope_version_is_refused_clearly(tmp_path: Path) -> None:
    store, path = await _stored(tmp_path)
    path.write_bytes(new_file(_envelope(path).replace(b'"version":1', b'"version":7'), 1))
    with pytest.raises(CorruptSessionError, match="unsupported session file version 7"):
        await store.get("conv")


async def test_a_file_of_another_format_is_refused(tmp_path: Path) -> None:
    store, path = await _stored(tmp_path)
    path.write_bytes(b'{"format":"checkflow.checkpoint","version":1}')
    with pytest.raises(CorruptSessionError, match=r"checkflow\.checkpoint"):
        await store.get("conv")


async def test_a_file_holding_another_session_is_refused(tmp_path: Path) -> None:
    store, path = await _stored(tmp_path)
    await store.set(AgentSession("other"))
    path.write_bytes(store.path_for("other").read_bytes())
    with pytest.raises(CorruptSessionError, match="'other', not 'conv'"):
        await store.get("conv")


async def test_a_corrupt_file_fails_a_conditional_write_but_an_unconditional_one_heals_it(
    tmp_path: Path,
) -> None:
    store, path = await _stored(tmp_path)
    path.write_bytes(b"{not json")
    with pytest.raises(CorruptSessionError):
        await store.set(AgentSession("conv"), expected_version="anything")
    await store.set(AgentSession("conv", {"fresh": True}))
    loaded = await store.get("conv")
    assert loaded is not None and loaded.state == {"fresh": True}


async def test_two_store_objects_on_one_root_share_conflict_detection(tmp_path: Path) -> None:
    first, second = FileSessionStore(tmp_path), FileSessionStore(tmp_path)
    base = await first.set(AgentSession("s"))
    await second.set(AgentSession("s", {"by": "second"}), expected_version=base)
    with pytest.raises(SessionConflictError):
        await first.set(AgentSession("s", {"by": "first"}), expected_version=base)


def _contender(root: str, base: str | None, writer: int, barrier: object, results: object) -> None:
    """Write "shared" at ``base``, or create-only when ``base`` is None; report the outcome."""
    store = FileSessionStore(root)
    session = AgentSession("shared", {"writer": writer})
    barrier.wait()  # type: ignore[attr-defined]
    try:
        asyncio.run(store.set(session, expected_version=base, create=base is None))
        results.put((writer, "won"))  # type: ignore[attr-defined]
    except SessionConflictError:
        results.put((writer, "conflict"))  # type: ignore[attr-defined]


@pytest.mark.parametrize("write", ["compare-and-set", "create-only"])
async def test_two_processes_racing_one_write_exactly_one_wins(tmp_path: Path, write: str) -> None:
    store = FileSessionStore(tmp_path)
    base = None
    if write == "compare-and-set":
        base = await store.set(AgentSession("shared", {"writer": None}))
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_contender, args=(str(tmp_path), base, n, barrier, results))
        for n in (1, 2)
    ]
    for proc in procs:
        proc.start()
    outcomes = dict(await asyncio.to_thread(lambda: [results.get(timeout=60) for _ in procs]))
    for proc in procs:
        await asyncio.to_thread(proc.join, 60)
        assert proc.exitcode == 0
    assert sorted(outcomes.values()) == ["conflict", "won"]
    winner = next(w for w, outcome in outcomes.items() if outcome == "won")
    loaded = await store.get("shared")
    assert loaded is not None and loaded.state == {"writer": winner}


def test_an_unknown_format_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'yaml'"):
        FileSessionStore(tmp_path, format="yaml")  # type: ignore[arg-type]
