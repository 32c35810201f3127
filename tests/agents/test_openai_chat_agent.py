"""OpenAIChatAgent against a respx-mocked Chat Completions endpoint (the one thing we can't run)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from checkflow.agents import (
    AgentResponse,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    OpenAIChatAgent,
    TextContent,
    UsageDetails,
    UserInputRequestContent,
)
from checkflow.errors import AgentError, AgentServiceError
from checkflow.sessions import FileSessionStore

BASE_URL = "https://llm.test/v1"
WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}


def completion(content: str | None = None, tool_calls: list[Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message}],
    }


def sse(*chunks: dict[str, Any]) -> bytes:
    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    return ("".join(events) + "data: [DONE]\n\n").encode()


def delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields}]}


def sent(route: respx.Route, call: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(route.calls[call].request.content)
    return body


@pytest.fixture
def endpoint() -> Iterator[respx.Route]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as mock:
        yield mock.post("/chat/completions")


@pytest.fixture
def agent() -> OpenAIChatAgent:
    return OpenAIChatAgent(
        "gpt-test", base_url=BASE_URL, api_key="sk-test", instructions="Be brief."
    )


async def test_a_plain_reply_comes_back_as_an_assistant_message(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    endpoint.respond(json=completion("Hello there"))
    response = await agent.run("hi")
    assert response.messages == [ChatMessage("assistant", "Hello there")]
    assert response.text == "Hello there"
    request = endpoint.calls.last.request
    assert request.headers["authorization"] == "Bearer sk-test"
    assert sent(endpoint) == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
        ],
    }


async def test_history_is_kept_in_the_session_and_sent_on_the_next_turn(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    endpoint.side_effect = [
        httpx.Response(200, json=completion("Paris")),
        httpx.Response(200, json=completion("About 2 million")),
    ]
    session = agent.create_session()
    await agent.run("Capital of France?", session=session)
    await agent.run("Population?", session=session)
    assert sent(endpoint)["messages"][1:] == [
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris"},
        {"role": "user", "content": "Population?"},
    ]
    assert [m.text for m in session.state["messages"]] == [
        "Capital of France?",
        "Paris",
        "Population?",
        "About 2 million",
    ]


async def test_history_survives_a_file_session_store_round_trip(
    agent: OpenAIChatAgent, endpoint: respx.Route, tmp_path: Path
) -> None:
    endpoint.respond(json=completion("ok"))
    store = FileSessionStore(tmp_path)
    session = agent.create_session(session_id="conv")
    await agent.run("first", session=session)
    await store.set(session)
    loaded = await store.get("conv")
    assert loaded is not None
    await agent.run("second", session=loaded)
    assert [m["content"] for m in sent(endpoint)["messages"][1:]] == ["first", "ok", "second"]


async def test_a_streamed_reply_yields_text_deltas_and_records_the_whole_message(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    endpoint.respond(
        content=sse(delta(role="assistant"), delta(content="Hel"), delta(content="lo")),
        headers={"content-type": "text/event-stream"},
    )
    session = agent.create_session()
    updates = [u async for u in agent.run("hi", session=session, stream=True)]
    assert [u.text for u in updates] == ["Hel", "lo"]
    assert sent(endpoint)["stream"] is True
    assert session.state["messages"] == [
        ChatMessage("user", "hi"),
        ChatMessage("assistant", "Hello"),
    ]


async def test_a_tool_call_round_trip(endpoint: respx.Route) -> None:
    agent = OpenAIChatAgent("gpt-test", base_url=BASE_URL, api_key="k", tools=[WEATHER_TOOL])
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
    }
    endpoint.side_effect = [
        httpx.Response(200, json=completion(None, [call])),
        httpx.Response(200, json=completion("It is 3°C in Oslo.")),
    ]
    session = agent.create_session()
    first = await agent.run("Weather in Oslo?", session=session)
    assert first.function_calls == [FunctionCallContent("call_1", "get_weather", {"city": "Oslo"})]
    assert sent(endpoint)["tools"] == [WEATHER_TOOL]

    answer = ChatMessage("tool", FunctionResultContent("call_1", {"celsius": 3}))
    second = await agent.run(answer, session=session)
    assert second.text == "It is 3°C in Oslo."
    assert sent(endpoint)["messages"] == [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"celsius":3}'},
    ]


async def test_streamed_tool_call_fragments_are_assembled_into_one_call(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    first = {"index": 0, "id": "call_9", "function": {"name": "search", "arguments": '{"q": '}}
    rest = {"index": 0, "function": {"arguments": '"cats"}'}}
    endpoint.respond(
        content=sse(delta(tool_calls=[first]), delta(tool_calls=[rest])),
        headers={"content-type": "text/event-stream"},
    )
    updates = [u async for u in agent.run("find cats", stream=True)]
    response = AgentResponse.from_updates(updates)
    assert response.function_calls == [FunctionCallContent("call_9", "search", {"q": "cats"})]


@pytest.mark.parametrize("status", [429, 500])
async def test_an_error_status_raises_agent_service_error_carrying_it(
    agent: OpenAIChatAgent, endpoint: respx.Route, status: int
) -> None:
    endpoint.respond(status, json={"error": {"message": "slow down", "type": "rate_limit"}})
    session = agent.create_session()
    with pytest.raises(AgentServiceError, match=f"HTTP {status}: slow down") as caught:
        await agent.run("hi", session=session)
    assert caught.value.status_code == status
    assert session.state == {}


@pytest.mark.parametrize("status", [429, 500])
async def test_an_error_status_while_streaming_raises_agent_service_error(
    agent: OpenAIChatAgent, endpoint: respx.Route, status: int
) -> None:
    endpoint.respond(status, text="upstream exploded")
    with pytest.raises(AgentServiceError, match="upstream exploded") as caught:
        [u async for u in agent.run("hi", stream=True)]
    assert caught.value.status_code == status


async def test_a_connection_failure_raises_agent_service_error_without_status(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    endpoint.side_effect = httpx.ConnectError("refused")
    with pytest.raises(AgentServiceError, match="request failed") as caught:
        await agent.run("hi")
    assert caught.value.status_code is None


async def test_a_malformed_completion_raises_agent_service_error(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    endpoint.respond(json={"choices": [{"message": {"content": 42}}]})
    with pytest.raises(AgentServiceError, match="malformed completion"):
        await agent.run("hi")


async def test_tool_arguments_that_are_not_json_raise_agent_service_error(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}}
    endpoint.respond(json=completion(None, [call]))
    with pytest.raises(AgentServiceError, match="'f' with arguments that are not JSON"):
        await agent.run("hi")


async def test_a_user_input_request_cannot_be_sent_to_the_model(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    message = ChatMessage("assistant", UserInputRequestContent("r", {}))
    with pytest.raises(AgentError, match="UserInputRequestContent"):
        await agent.run(message)
    assert not endpoint.called


async def test_two_concurrent_sessions_on_one_agent_are_independent(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    both_in_flight = asyncio.Barrier(2)

    async def echo(request: httpx.Request) -> httpx.Response:
        await asyncio.wait_for(both_in_flight.wait(), 10)  # both requests are open at once
        last = json.loads(request.content)["messages"][-1]["content"]
        return httpx.Response(200, json=completion(f"echo {last}"))

    endpoint.side_effect = echo
    alice, bob = agent.create_session(), agent.create_session()
    replies = await asyncio.gather(agent.run("alice", session=alice), agent.run("bob", session=bob))
    assert [r.text for r in replies] == ["echo alice", "echo bob"]
    assert [m.text for m in alice.state["messages"]] == ["alice", "echo alice"]
    assert [m.text for m in bob.state["messages"]] == ["bob", "echo bob"]


async def test_an_injected_client_is_used_and_left_open(endpoint: respx.Route) -> None:
    endpoint.respond(json=completion("ok"))
    async with httpx.AsyncClient(headers={"x-app": "demo"}) as client:
        agent = OpenAIChatAgent("m", base_url=BASE_URL, http_client=client)
        await agent.run("hi")
        await agent.aclose()
        assert not client.is_closed
    assert endpoint.calls.last.request.headers["x-app"] == "demo"


def test_each_event_loop_gets_its_own_client(endpoint: respx.Route) -> None:
    endpoint.respond(json=completion("ok"))
    agent = OpenAIChatAgent("m", base_url=BASE_URL)

    async def use() -> httpx.AsyncClient:
        assert (await agent.run("hi")).text == "ok"
        client = agent._client()
        assert agent._client() is client  # reused within the loop
        await agent.aclose()
        assert client.is_closed
        return client

    assert asyncio.run(use()) is not asyncio.run(use())
    assert len(endpoint.calls) == 2


async def test_text_content_objects_are_sent_as_plain_content(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    endpoint.respond(json=completion("ok"))
    await agent.run(
        [ChatMessage("system", "extra"), ChatMessage("user", [TextContent("a"), TextContent("b")])]
    )
    assert sent(endpoint)["messages"][1:] == [
        {"role": "system", "content": "extra"},
        {"role": "user", "content": "ab"},
    ]


async def test_an_abandoned_stream_leaves_the_session_unchanged(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    endpoint.respond(
        content=sse(delta(content="Hel"), delta(content="lo")),
        headers={"content-type": "text/event-stream"},
    )
    session = agent.create_session()
    stream = agent.run("hi", session=session, stream=True)
    async for _ in stream:
        break
    await stream.aclose()  # type: ignore[attr-defined]
    assert session.state == {}


async def test_function_results_are_sent_before_text_in_the_same_message(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    endpoint.respond(json=completion("ok"))
    mixed = ChatMessage("user", [TextContent("also, hurry"), FunctionResultContent("c1", "42")])
    await agent.run(mixed)
    assert sent(endpoint)["messages"][1:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        {"role": "user", "content": "also, hurry"},
    ]


USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
         "prompt_tokens_details": {"cached_tokens": 3},
         "completion_tokens_details": {"reasoning_tokens": 2}}


async def test_a_reply_carries_the_usage_the_service_reported(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    endpoint.respond(json={**completion("Hi"), "usage": USAGE})
    response = await agent.run("hi")
    assert response.usage == UsageDetails(11, 7, 18, cached_input_tokens=3, reasoning_tokens=2)
    endpoint.respond(json=completion("Hi"))
    assert (await agent.run("again")).usage is None  # a service that reports none


async def test_a_streamed_reply_asks_for_usage_and_reports_it_on_a_last_update(
    agent: OpenAIChatAgent, endpoint: respx.Route
) -> None:
    endpoint.respond(
        content=sse(delta(content="Hel"), delta(content="lo"),
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                    {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
        headers={"content-type": "text/event-stream"},
    )
    session = agent.create_session()
    updates = [u async for u in agent.run("hi", session=session, stream=True)]
    assert sent(endpoint)["stream_options"] == {"include_usage": True}
    assert [u.text for u in updates] == ["Hel", "lo", ""]
    assert updates[-1].usage == UsageDetails(5, 2, 7) and updates[-1].contents == ()
    whole = AgentResponse.from_updates(updates)
    assert whole.text == "Hello" and whole.usage == UsageDetails(5, 2, 7)
    assert session.state["messages"][-1] == ChatMessage("assistant", "Hello")  # no usage kept
    assert whole.to_updates()[-1].usage == UsageDetails(5, 2, 7)
