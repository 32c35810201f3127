"""AgentSession: identity, live state, and its place in the one state codec."""

from __future__ import annotations

import pytest

from checkflow import state
from checkflow.agents import ChatMessage
from checkflow.sessions import AgentSession


def test_a_new_session_gets_a_unique_hex_id_and_empty_state() -> None:
    first, second = AgentSession(), AgentSession()
    assert first.session_id != second.session_id
    assert len(first.session_id) == 32 and int(first.session_id, 16) >= 0
    assert first.state == {} and first.version is None


def test_state_is_the_live_dict_given() -> None:
    backing: dict[str, object] = {"n": 1}
    session = AgentSession("s", backing)
    session.state["n"] = 2
    assert backing == {"n": 2}


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_a_session_round_trips_through_the_codec_with_a_stable_type_id(fmt: str) -> None:
    session = AgentSession("s", {"messages": [ChatMessage("user", "hi")], "at": {1, 2}})
    data = state.encode(session, format=fmt)  # type: ignore[arg-type]
    assert state.decode(data, format=fmt) == session  # type: ignore[arg-type]
    assert state.to_builtins(session)["$type"] == "checkflow.AgentSession"


def test_a_session_nested_in_other_state_round_trips() -> None:
    tree = {"executor_states": {"writer": {"session": AgentSession("inner", {"k": (1, "a")})}}}
    decoded = state.decode(state.encode(tree))
    assert decoded["executor_states"]["writer"]["session"] == AgentSession("inner", {"k": (1, "a")})


def test_the_store_version_is_runtime_only_and_never_encoded() -> None:
    session = AgentSession("s")
    session.version = "v1"
    assert "v1" not in state.encode(session).decode()
    assert state.decode(state.encode(session)).version is None


def test_sessions_compare_by_id_and_state() -> None:
    assert AgentSession("s", {"a": 1}) == AgentSession("s", {"a": 1})
    assert AgentSession("s", {"a": 1}) != AgentSession("s", {"a": 2})
    assert AgentSession("s") != AgentSession("t")
