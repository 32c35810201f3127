"""CosmosSessionStore against the emulator: its item layout, shared containers, corruption.

The SessionStore behaviour (versions, conflicts, deletes) is the contract suite in
``tests/sessions``, which runs on Cosmos DB in both formats.
"""

from __future__ import annotations

from typing import Any

import pytest
from cosmos_support import make_state

from checkflow.checkpoints import Checkpoint
from checkflow.errors import CorruptSessionError, UnregisteredStateTypeError
from checkflow.sessions import AgentSession
from checkflow.storage.cosmos import CosmosCheckpointStorage, CosmosSessionStore
from checkflow.storage.cosmos._layout import partition_key


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
