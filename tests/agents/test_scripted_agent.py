"""ScriptedAgent: replies chosen by the session's own history, never by the agent object."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from checkflow import state
from checkflow.agents import (
    Agent,
    AgentResponse,
    ChatMessage,
    FunctionResultContent,
    ScriptedAgent,
    UserInputRequestContent,
)
from checkflow.errors import AgentError
from checkflow.sessions import AgentSession, FileSessionStore

APPROVAL = UserInputRequestContent("approve-1", {"question": "publish?"})


def test_a_scripted_agent_is_an_agent() -> None:
    assert isinstance(ScriptedAgent("bot", ["hi"]), Agent)


def test_a_reply_of_another_type_is_refused() -> None:
    with pytest.raises(TypeError, match="int"):
        ScriptedAgent("bot", ["ok", 3])  # type: ignore[list-item]


async def test_replies_follow_the_script_turn_by_turn() -> None:
    agent = ScriptedAgent("bot", ["one", "two"])
    session = agent.create_session()
    assert (await agent.run("a", session=session)).text == "one"
    assert (await agent.run("b", session=session)).text == "two"


async def test_the_turn_is_recorded_in_the_session_history() -> None:
    agent = ScriptedAgent("bot", ["one"])
    session = agent.create_session(session_id="s1")
    response = await agent.run("hello", session=session)
    assert session.session_id == "s1"
    assert session.state["messages"] == [ChatMessage("user", "hello"), *response.messages]
    assert response.author_name == "bot"


async def test_two_sessions_each_get_the_whole_script() -> None:
    agent = ScriptedAgent("bot", ["one", "two"])
    first, second = agent.create_session(), agent.create_session()
    assert (await agent.run("a", session=first)).text == "one"
    assert (await agent.run("a", session=second)).text == "one"
    assert (await agent.run("b", session=first)).text == "two"


async def test_concurrent_sessions_on_one_agent_stay_independent() -> None:
    agent = ScriptedAgent("bot", ["one", "two"])
    sessions = [agent.create_session() for _ in range(5)]
    replies = await asyncio.gather(*(agent.run("x", session=s) for s in sessions))
    assert [r.text for r in replies] == ["one"] * 5


async def test_a_restored_older_session_gets_the_same_reply_again() -> None:
    agent = ScriptedAgent("bot", ["one", "two", "three"])
    session = agent.create_session()
    await agent.run("a", session=session)
    saved = state.encode(session)
    assert (await agent.run("b", session=session)).text == "two"
    restored = state.decode(saved)
    assert (await agent.run("b", session=restored)).text == "two"


async def test_without_a_session_every_run_is_one_shot() -> None:
    agent = ScriptedAgent("bot", ["one", "two"])
    assert (await agent.run("a")).text == "one"
    assert (await agent.run("a")).text == "one"


async def test_running_past_the_script_is_a_clear_agent_error() -> None:
    agent = ScriptedAgent("bot", ["only"])
    session = agent.create_session()
    await agent.run("a", session=session)
    with pytest.raises(AgentError, match=r"no reply left.*1 replies.*1 assistant turns"):
        await agent.run("b", session=session)


async def test_a_failed_run_leaves_the_session_unchanged() -> None:
    agent = ScriptedAgent("bot", [])
    session = agent.create_session()
    with pytest.raises(AgentError):
        await agent.run("a", session=session)
    assert session.state == {}


async def test_a_user_input_request_reply_pauses_for_an_answer() -> None:
    agent = ScriptedAgent("bot", [APPROVAL, "published"])
    session = agent.create_session()
    response = await agent.run("draft ready", session=session)
    assert response.user_input_requests == [APPROVAL]
    answer = ChatMessage("user", FunctionResultContent("approve-1", True))
    assert (await agent.run(answer, session=session)).text == "published"


async def test_a_run_that_does_not_answer_a_pending_request_is_refused() -> None:
    agent = ScriptedAgent("bot", [APPROVAL, "published"])
    session = agent.create_session()
    await agent.run("draft ready", session=session)
    before = state.encode(session)
    with pytest.raises(AgentError, match=r"waiting for an answer to request 'approve-1'"):
        await agent.run("any news?", session=session)
    assert state.encode(session) == before


async def test_an_answer_to_a_request_never_made_is_refused() -> None:
    agent = ScriptedAgent("bot", ["hi"])
    stray = ChatMessage("user", FunctionResultContent("approve-9", True))
    with pytest.raises(AgentError, match="'approve-9', which it did not ask for"):
        await agent.run(stray)


async def test_streaming_yields_the_reply_and_records_the_turn() -> None:
    agent = ScriptedAgent("bot", ["streamed"])
    session = agent.create_session()
    updates = [u async for u in agent.run("a", session=session, stream=True)]
    assert AgentResponse.from_updates(updates).text == "streamed"
    assert [m.role for m in session.state["messages"]] == ["user", "assistant"]


async def test_an_invalid_input_fails_at_the_call_not_later() -> None:
    agent = ScriptedAgent("bot", ["hi"])
    with pytest.raises(TypeError):
        agent.run([42])  # type: ignore[list-item]


async def test_a_session_stored_between_turns_continues_the_script(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    agent = ScriptedAgent("bot", ["one", "two"])
    session = agent.create_session(session_id="conv")
    await agent.run("a", session=session)
    await store.set(session)
    loaded = await store.get("conv")
    assert isinstance(loaded, AgentSession)
    assert (await agent.run("b", session=loaded)).text == "two"
