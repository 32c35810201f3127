"""The SessionStore contract, run against every store: get/set/delete and compare-and-set."""

from __future__ import annotations

import asyncio

import pytest

from checkflow.agents import ChatMessage, FunctionCallContent, TextContent, UserInputRequestContent
from checkflow.errors import SessionConflictError, UnregisteredStateTypeError
from checkflow.sessions import AgentSession, SessionStore


def _conversation() -> AgentSession:
    return AgentSession(
        "conv-1",
        {
            "messages": [
                ChatMessage("user", "factor 10"),
                ChatMessage(
                    "assistant",
                    [
                        TextContent("calling"),
                        FunctionCallContent("call-1", "factor", {"n": 10, "opts": (1, 2)}),
                    ],
                ),
                ChatMessage("assistant", UserInputRequestContent("req-1", {"q": "publish?"})),
            ],
            "cursor": 3,
        },
    )


async def _written_twice(store: SessionStore) -> tuple[AgentSession, str, str]:
    """Session "s" ({"n": 1}) written twice: the session, its stale and its current version."""
    session = AgentSession("s", {"n": 1})
    stale = await store.set(session)
    current = await store.set(session, expected_version=stale)
    return session, stale, current


def test_every_store_satisfies_the_protocol(session_store: SessionStore) -> None:
    assert isinstance(session_store, SessionStore)


async def test_get_of_a_missing_session_is_none(session_store: SessionStore) -> None:
    assert await session_store.get("nobody") is None


async def test_set_then_get_round_trips_nested_registered_content(
    session_store: SessionStore,
) -> None:
    original = _conversation()
    await session_store.set(original)
    loaded = await session_store.get("conv-1")
    assert loaded == original
    assert loaded is not original
    call = loaded.state["messages"][1].contents[1]
    assert isinstance(call, FunctionCallContent)
    assert call.arguments["opts"] == (1, 2)


async def test_get_returns_a_copy_unaffected_by_later_changes(session_store: SessionStore) -> None:
    session = AgentSession("s", {"items": [1]})
    await session_store.set(session)
    session.state["items"].append(2)
    loaded = await session_store.get("s")
    assert loaded is not None and loaded.state == {"items": [1]}


async def test_set_returns_the_version_get_reports(session_store: SessionStore) -> None:
    session = AgentSession("s")
    version = await session_store.set(session)
    assert session.version == version
    loaded = await session_store.get("s")
    assert loaded is not None and loaded.version == version


async def test_every_write_gets_a_new_version(session_store: SessionStore) -> None:
    session = AgentSession("s")
    first = await session_store.set(session)
    second = await session_store.set(session, expected_version=first)
    assert first != second


async def test_set_with_the_current_version_succeeds(session_store: SessionStore) -> None:
    session = AgentSession("s", {"n": 1})
    version = await session_store.set(session)
    session.state["n"] = 2
    await session_store.set(session, expected_version=version)
    loaded = await session_store.get("s")
    assert loaded is not None and loaded.state == {"n": 2}


async def test_stale_expected_version_raises_conflict_naming_both(
    session_store: SessionStore,
) -> None:
    session, stale, current = await _written_twice(session_store)
    session.state["n"] = 99
    with pytest.raises(SessionConflictError) as caught:
        await session_store.set(session, expected_version=stale)
    assert caught.value.expected_version == stale
    assert caught.value.actual_version == current
    assert stale in str(caught.value) and current in str(caught.value)
    loaded = await session_store.get("s")
    assert loaded is not None and loaded.state == {"n": 1}


async def test_expected_version_for_a_missing_session_conflicts(
    session_store: SessionStore,
) -> None:
    with pytest.raises(SessionConflictError) as caught:
        await session_store.set(AgentSession("new"), expected_version="v-from-elsewhere")
    assert caught.value.actual_version is None
    assert await session_store.get("new") is None


async def test_a_version_from_before_a_delete_never_matches_again(
    session_store: SessionStore,
) -> None:
    session = AgentSession("s")
    old = await session_store.set(session)
    await session_store.delete("s")
    await session_store.set(session)
    with pytest.raises(SessionConflictError):
        await session_store.set(session, expected_version=old)


async def test_delete_forgets_the_session(session_store: SessionStore) -> None:
    await session_store.set(AgentSession("s"))
    await session_store.delete("s")
    assert await session_store.get("s") is None


async def test_delete_of_a_missing_session_is_not_an_error(session_store: SessionStore) -> None:
    await session_store.delete("never-stored")


@pytest.mark.parametrize("session_id", ["../x", "a/b", "x" * 300, "CON", "", "ünï cødé\n"])
async def test_any_session_id_round_trips(session_store: SessionStore, session_id: str) -> None:
    await session_store.set(AgentSession(session_id, {"id": session_id}))
    loaded = await session_store.get(session_id)
    assert loaded is not None
    assert loaded.session_id == session_id and loaded.state == {"id": session_id}


async def test_unregistered_state_fails_at_set_and_stores_nothing(
    session_store: SessionStore,
) -> None:
    class Note:
        pass

    with pytest.raises(UnregisteredStateTypeError) as caught:
        await session_store.set(AgentSession("s", {"notes": [Note()]}))
    assert "notes[0]" in str(caught.value)
    assert await session_store.get("s") is None


async def test_concurrent_compare_and_set_lets_exactly_one_writer_win(
    session_store: SessionStore,
) -> None:
    base = await session_store.set(AgentSession("s", {"writer": None}))
    writers = [AgentSession("s", {"writer": n}) for n in range(8)]
    results = await asyncio.gather(
        *(session_store.set(w, expected_version=base) for w in writers), return_exceptions=True
    )
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1
    assert all(isinstance(r, SessionConflictError) for r in results if not isinstance(r, str))
    loaded = await session_store.get("s")
    assert loaded is not None and loaded.version == winners[0]


async def test_a_create_only_write_stores_a_new_session(session_store: SessionStore) -> None:
    session = AgentSession("s", {"n": 1})
    version = await session_store.set(session, create=True)
    loaded = await session_store.get("s")
    assert loaded is not None and loaded.state == {"n": 1} and loaded.version == version


async def test_a_create_only_write_over_an_existing_session_conflicts_naming_it(
    session_store: SessionStore,
) -> None:
    current = await session_store.set(AgentSession("s", {"n": 1}))
    with pytest.raises(SessionConflictError) as caught:
        await session_store.set(AgentSession("s", {"n": 2}), create=True)
    assert caught.value.expected_version is None
    assert caught.value.actual_version == current
    loaded = await session_store.get("s")
    assert loaded is not None and loaded.state == {"n": 1}


async def test_a_create_only_write_after_a_delete_succeeds(session_store: SessionStore) -> None:
    await session_store.set(AgentSession("s"))
    await session_store.delete("s")
    await session_store.set(AgentSession("s", {"again": True}), create=True)
    loaded = await session_store.get("s")
    assert loaded is not None and loaded.state == {"again": True}


async def test_create_together_with_an_expected_version_is_refused(
    session_store: SessionStore,
) -> None:
    with pytest.raises(ValueError, match="not both"):
        await session_store.set(AgentSession("s"), expected_version="v", create=True)
    assert await session_store.get("s") is None


async def test_two_racing_creators_of_one_session_make_exactly_one_winner(
    session_store: SessionStore,
) -> None:
    both_ready = asyncio.Barrier(2)

    async def create(writer: str) -> str:
        await both_ready.wait()
        return await session_store.set(AgentSession("s", {"writer": writer}), create=True)

    results = await asyncio.gather(create("a"), create("b"), return_exceptions=True)
    (winner,) = [r for r in results if isinstance(r, str)]
    (loser,) = [r for r in results if not isinstance(r, str)]
    assert isinstance(loser, SessionConflictError) and loser.actual_version == winner
    loaded = await session_store.get("s")
    assert loaded is not None and loaded.version == winner


async def test_a_delete_at_the_current_version_removes_the_session(
    session_store: SessionStore,
) -> None:
    version = await session_store.set(AgentSession("s"))
    await session_store.delete("s", expected_version=version)
    assert await session_store.get("s") is None


async def test_a_delete_at_a_stale_version_conflicts_and_keeps_the_session(
    session_store: SessionStore,
) -> None:
    _, stale, current = await _written_twice(session_store)
    with pytest.raises(SessionConflictError) as caught:
        await session_store.delete("s", expected_version=stale)
    assert caught.value.expected_version == stale
    assert caught.value.actual_version == current
    assert await session_store.get("s") is not None


async def test_a_versioned_delete_of_a_missing_session_conflicts(
    session_store: SessionStore,
) -> None:
    with pytest.raises(SessionConflictError) as caught:
        await session_store.delete("never-stored", expected_version="v-from-elsewhere")
    assert caught.value.actual_version is None
