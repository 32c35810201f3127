"""AgentHost: one agent session per (principal, conversation), stored only after a good run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx
import pytest

from checkflow.agents import AgentResponse, ChatMessage, ScriptedAgent
from checkflow.errors import ConversationBusyError, ConversationNotFoundError
from checkflow.hosting import AgentHost, create_app
from checkflow.hosting._keys import ConversationKey
from checkflow.sessions import AgentSession


@pytest.fixture
def host() -> AgentHost:
    return AgentHost(ScriptedAgent("greeter", ["hello", "again", "bye"]))


async def test_each_conversation_gets_its_own_session(host: AgentHost) -> None:
    assert (await host.run("a", "hi")).text == "hello"
    assert (await host.run("a", "hi")).text == "again"
    assert (await host.run("b", "hi")).text == "hello"


async def test_principals_never_share_a_session(host: AgentHost) -> None:
    await host.run("a", "hi", principal="alice")
    assert (await host.run("a", "hi", principal="bob")).text == "hello"
    with pytest.raises(ConversationNotFoundError):
        await host.get_session("a", principal="mallory")


async def test_the_session_is_stored_inside_the_conversation(host: AgentHost) -> None:
    await host.run("a", "hi")
    session = await host.get_session("a")
    assert isinstance(session, AgentSession)
    assert session.state  # the agent's history lives here, not on the agent


class HeldAgent(ScriptedAgent):
    """Waits on an event inside its run (the gate); on "fail" or "abandon" it first scribbles.

    "fail" writes to the session, then raises; "abandon" writes to the session, then replies
    normally (for a caller that stops reading the stream before its end).
    """

    def __init__(self) -> None:
        super().__init__("held", ["done", "done again"])
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def _respond(self, messages: list[ChatMessage], session: AgentSession) -> AgentResponse:
        if messages[-1].text in ("fail", "abandon"):
            session.state["scratch"] = "half-written"
        if messages[-1].text == "fail":
            raise RuntimeError("the model is down")
        if messages[-1].text == "hold":
            self.entered.set()
            await asyncio.wait_for(self.release.wait(), 10)
        return await super()._respond(messages, session)


async def test_a_busy_conversation_is_refused(host: AgentHost) -> None:
    agent = HeldAgent()
    host = AgentHost(agent)
    first = asyncio.create_task(host.run("a", "hold"))
    await asyncio.wait_for(agent.entered.wait(), 10)
    with pytest.raises(ConversationBusyError):
        await host.run("a", "again")
    agent.release.set()
    assert (await first).text == "done"


async def stored_agent_session(host: AgentHost, conversation_id: str) -> Any:
    """The agent session as the session store holds it (not as any live object has it)."""
    stored = await host.session_store.get(ConversationKey(None, conversation_id).session_id)
    assert stored is not None
    return stored.state["agent_session"]


async def test_a_failed_run_leaves_the_session_unchanged() -> None:
    host = AgentHost(HeldAgent())
    await host.run("a", "first")
    before = await stored_agent_session(host, "a")
    with pytest.raises(RuntimeError):
        await host.run("a", "fail")  # the agent wrote to its session before failing
    after = await stored_agent_session(host, "a")
    assert "scratch" not in after.state
    assert after == before
    assert (await host.run("a", "next")).text == "done again"


async def test_a_stream_closed_early_leaves_the_session_unchanged() -> None:
    host = AgentHost(HeldAgent())
    await host.run("a", "first")
    before = await stored_agent_session(host, "a")
    updates = await host.run("a", "abandon", stream=True)
    assert isinstance(updates, AsyncGenerator)
    await anext(updates)  # the agent has written to its session by now
    await updates.aclose()
    after = await stored_agent_session(host, "a")
    assert "scratch" not in after.state
    assert after == before
    assert (await host.run("a", "next")).text == "done again"


async def test_a_streamed_turn_is_stored_once_complete(host: AgentHost) -> None:
    updates = await host.run("a", "hi", stream=True)
    text = "".join([u.text async for u in updates])
    assert text == "hello"
    assert (await host.run("a", "hi")).text == "again"


async def test_deleting_a_conversation_forgets_its_session(host: AgentHost) -> None:
    await host.run("a", "hi")
    await host.delete_conversation("a")
    with pytest.raises(ConversationNotFoundError):
        await host.get_session("a")
    assert (await host.run("a", "hi")).text == "hello"
    with pytest.raises(ConversationNotFoundError):
        await host.delete_conversation("never")
    assert await host.session_store.get(ConversationKey(None, "never").session_id) is None


@pytest.fixture
async def client(host: AgentHost) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(host))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


async def test_an_agent_is_served_over_the_native_api(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/conversations/a/runs", json={"message": "hi"})
    body: dict[str, Any] = response.json()
    assert response.status_code == 200
    assert body["conversation_id"] == "a"
    assert body["text"] == "hello"
    assert body["messages"][0]["role"] == "assistant"
    assert (await client.delete("/v1/conversations/a")).status_code == 204
