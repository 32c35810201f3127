"""CosmosSessionStore against the emulator: ETags as versions, conflicts, formats, corruption."""

from __future__ import annotations

from typing import Any

import pytest
from cosmos_support import make_state

from checkflow.checkpoints import Checkpoint
from checkflow.errors import CorruptSessionError, SessionConflictError, UnregisteredStateTypeError
from checkflow.sessions import AgentSession, SessionStore
from checkflow.storage.cosmos import CosmosCheckpointStorage, CosmosSessionStore
from checkflow.storage.cosmos._layout import partition_key


async def test_a_missing_session_reads_as_none(cosmos_sessions: CosmosSessionStore) -> None:
    assert await cosmos_sessions.get("nobody") is None


async def test_set_then_get_round_trips_state_with_the_etag_as_version(
    cosmos_sessions: CosmosSessionStore,
) -> None:
    session = AgentSession("s-1", {"notes": ("a", b"b"), "count": 3})
    version = await cosmos_sessions.set(session)
    loaded = await cosmos_sessions.get("s-1")
    assert loaded == session
    assert loaded is not None
    assert loaded.version == version == session.version


async def test_the_store_satisfies_the_session_store_protocol(
    cosmos_sessions: CosmosSessionStore,
) -> None:
    assert isinstance(cosmos_sessions, SessionStore)


async def test_a_write_with_the_current_version_replaces_and_bumps_it(
    cosmos_sessions: CosmosSessionStore,
) -> None:
    session = AgentSession("s-1", {"n": 1})
    first = await cosmos_sessions.set(session)
    session.state["n"] = 2
    second = await cosmos_sessions.set(session, expected_version=first)
    assert second != first
    loaded = await cosmos_sessions.get("s-1")
    assert loaded is not None and loaded.state == {"n": 2}


async def test_a_stale_version_conflicts_naming_the_current_one(
    cosmos_sessions: CosmosSessionStore,
) -> None:
    session = AgentSession("s-1", {"n": 1})
    stale = await cosmos_sessions.set(session)
    current = await cosmos_sessions.set(AgentSession("s-1", {"n": 2}), expected_version=stale)
    with pytest.raises(SessionConflictError) as caught:
        await cosmos_sessions.set(AgentSession("s-1", {"n": 3}), expected_version=stale)
    assert (caught.value.expected_version, caught.value.actual_version) == (stale, current)
    loaded = await cosmos_sessions.get("s-1")
    assert loaded is not None and loaded.state == {"n": 2}


async def test_expecting_a_version_of_a_missing_session_conflicts(
    cosmos_sessions: CosmosSessionStore,
) -> None:
    with pytest.raises(SessionConflictError) as caught:
        await cosmos_sessions.set(AgentSession("ghost"), expected_version='"some-etag"')
    assert caught.value.actual_version is None
    assert await cosmos_sessions.get("ghost") is None


async def test_delete_forgets_and_tolerates_a_missing_session(
    cosmos_sessions: CosmosSessionStore,
) -> None:
    await cosmos_sessions.set(AgentSession("s-1"))
    await cosmos_sessions.delete("s-1")
    await cosmos_sessions.delete("s-1")
    assert await cosmos_sessions.get("s-1") is None


async def test_msgpack_sessions_round_trip(cosmos_container: Any) -> None:
    store = CosmosSessionStore(cosmos_container, format="msgpack")
    session = AgentSession("s-mp", {"blob": b"\x00\x01", "pair": (1, 2)})
    await store.set(session)
    assert await store.get("s-mp") == session
    item = await cosmos_container.read_item("session", partition_key="s-mp")
    assert item["format"] == "msgpack"


async def test_sessions_share_a_container_with_checkpoints_of_the_same_id(
    cosmos_container: Any,
) -> None:
    sessions = CosmosSessionStore(cosmos_container)
    storage = CosmosCheckpointStorage(cosmos_container)
    await sessions.set(AgentSession("same", {"k": "v"}))
    checkpoint = Checkpoint("same", checkpoint_storage=storage)
    await checkpoint.commit_snapshot(state=make_state())
    await storage.delete("same")
    loaded = await sessions.get("same")
    assert loaded is not None and loaded.state == {"k": "v"}
    assert await storage.list_checkpoint_ids() == []


async def test_a_garbled_session_item_is_reported_naming_it(
    cosmos_sessions: CosmosSessionStore, cosmos_container: Any
) -> None:
    await cosmos_sessions.set(AgentSession("s-1", {"n": 1}))
    item = await cosmos_container.read_item("session", partition_key="s-1")
    item["data"] = item["data"][: len(item["data"]) // 2]  # truncated JSON
    await cosmos_container.replace_item("session", item)
    with pytest.raises(CorruptSessionError, match="s-1/session"):
        await cosmos_sessions.get("s-1")


async def test_a_session_holding_an_unregistered_type_says_so_rather_than_corrupt(
    cosmos_sessions: CosmosSessionStore, cosmos_container: Any
) -> None:
    await cosmos_sessions.set(AgentSession("s-1", {"n": 1}))
    item = await cosmos_container.read_item("session", partition_key="s-1")
    item["data"] = item["data"].replace('"n":1', '"n":{"$type":"app.Gone","$value":1}')
    await cosmos_container.replace_item("session", item)
    with pytest.raises(UnregisteredStateTypeError, match=r"app\.Gone"):
        await cosmos_sessions.get("s-1")


async def test_a_session_item_holding_another_session_is_refused(
    cosmos_sessions: CosmosSessionStore, cosmos_container: Any
) -> None:
    await cosmos_sessions.set(AgentSession("s-1"))
    item = await cosmos_container.read_item("session", partition_key="s-1")
    item["pk"] = partition_key("s-2")
    await cosmos_container.create_item(item)
    with pytest.raises(CorruptSessionError, match="'s-1'"):
        await cosmos_sessions.get("s-2")
