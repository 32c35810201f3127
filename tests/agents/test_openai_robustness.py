"""OpenAIChatAgent when the service misbehaves (respx): retries with backoff on 429, 5xx and
connection errors (``Retry-After`` honoured, configurable, 0 disables), errors a stream
reports, a stream cut mid-reply, and multi-line ``data:`` fields."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx

from checkflow.agents import ChatMessage, OpenAIChatAgent
from checkflow.errors import AgentServiceError

BASE_URL = "https://llm.test/v1"


def completion(content: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


def chunk(content: str, finish: str | None = None) -> str:
    body = {"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n"


STREAM_HEADERS = {"content-type": "text/event-stream"}


@pytest.fixture
def endpoint() -> Iterator[respx.Route]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as mock:
        yield mock.post("/chat/completions")


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every backoff the agent waits, recorded instead of slept."""
    recorded: list[float] = []

    async def record(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr("checkflow.agents._openai._sleep", record)
    return recorded


def agent(**options: Any) -> OpenAIChatAgent:
    return OpenAIChatAgent("gpt-test", base_url=BASE_URL, api_key="k", **options)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
async def test_a_transient_status_is_retried_until_it_answers(
    status: int, endpoint: respx.Route, waits: list[float]
) -> None:
    endpoint.side_effect = [httpx.Response(status, text="busy"), httpx.Response(status),
                            httpx.Response(200, json=completion("finally"))]
    response = await agent(max_retries=2, retry_backoff=0.5).run("hi")
    assert response.text == "finally"
    assert len(endpoint.calls) == 3
    assert len(waits) == 2 and 0 <= waits[0] <= 0.5 and 0 <= waits[1] <= 1.0  # full jitter


async def test_retry_after_is_honoured_in_seconds_and_as_a_date(
    endpoint: respx.Route, waits: list[float]
) -> None:
    endpoint.side_effect = [
        httpx.Response(429, headers={"retry-after": "7"}),
        httpx.Response(503, headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        httpx.Response(429, headers={"retry-after": "3600"}),
        httpx.Response(200, json=completion("ok"))]
    assert (await agent(max_retries=3).run("hi")).text == "ok"
    assert waits == [7.0, 0.0, 60.0]  # a date in the past is now; a long one is capped


async def test_attempts_run_out_with_the_last_status(
    endpoint: respx.Route, waits: list[float]
) -> None:
    endpoint.respond(503, json={"error": {"message": "overloaded"}})
    with pytest.raises(AgentServiceError, match="overloaded") as caught:
        await agent(max_retries=3).run("hi")
    assert caught.value.status_code == 503
    assert len(endpoint.calls) == 4 and len(waits) == 3


async def test_zero_retries_disables_them(endpoint: respx.Route, waits: list[float]) -> None:
    endpoint.respond(429)
    with pytest.raises(AgentServiceError):
        await agent(max_retries=0).run("hi")
    assert len(endpoint.calls) == 1 and waits == []


async def test_a_client_error_is_never_retried(endpoint: respx.Route, waits: list[float]) -> None:
    endpoint.respond(400, json={"error": {"message": "bad model"}})
    with pytest.raises(AgentServiceError, match="bad model"):
        await agent().run("hi")
    assert len(endpoint.calls) == 1 and waits == []


async def test_connection_errors_are_retried_then_reported(
    endpoint: respx.Route, waits: list[float]
) -> None:
    endpoint.side_effect = [httpx.ConnectError("refused"),
                            httpx.Response(200, json=completion("up again"))]
    assert (await agent().run("hi")).text == "up again"
    endpoint.side_effect = httpx.ConnectError("refused")
    with pytest.raises(AgentServiceError, match="request failed") as caught:
        await agent(max_retries=1).run("hi")
    assert caught.value.status_code is None


async def test_a_stream_is_retried_before_its_first_byte(
    endpoint: respx.Route, waits: list[float]
) -> None:
    endpoint.side_effect = [
        httpx.Response(429),
        httpx.ConnectError("refused"),
        httpx.Response(200, content=chunk("Hi") + chunk("!", "stop") + "data: [DONE]\n\n",
                       headers=STREAM_HEADERS)]
    session = agent().create_session()
    updates = [u async for u in agent().run("hi", session=session, stream=True)]
    assert [u.text for u in updates] == ["Hi", "!"]
    assert len(waits) == 2


@pytest.mark.parametrize("body", [
    "event: error\ndata: {\"error\": {\"message\": \"model crashed\"}}\n\n",
    "data: {\"error\": {\"message\": \"model crashed\", \"type\": \"server_error\"}}\n\n",
])
async def test_an_error_the_stream_reports_raises_and_saves_nothing(
    body: str, endpoint: respx.Route, waits: list[float]
) -> None:
    endpoint.respond(200, content=chunk("partial ") + body, headers=STREAM_HEADERS)
    tested = agent()
    session = tested.create_session()
    with pytest.raises(AgentServiceError, match="model crashed"):
        [u async for u in tested.run("hi", session=session, stream=True)]
    assert session.state.get("messages", []) == []  # no partial reply saved as complete
    assert waits == []  # a reply had begun: never retried


async def _cut(after: bytes) -> AsyncIterator[bytes]:
    yield after
    raise httpx.ReadError("connection reset by peer")


async def test_a_stream_cut_mid_reply_raises_and_saves_nothing(
    endpoint: respx.Route, waits: list[float]
) -> None:
    endpoint.respond(200, stream=_cut(chunk("Hel").encode()), headers=STREAM_HEADERS)
    tested = agent()
    session = tested.create_session()
    seen = []
    with pytest.raises(AgentServiceError, match="streaming request failed"):
        async for update in tested.run("hi", session=session, stream=True):
            seen.append(update.text)
    assert seen == ["Hel"]
    assert session.state.get("messages", []) == []
    assert waits == []


async def test_a_stream_that_ends_without_finishing_raises(endpoint: respx.Route) -> None:
    endpoint.respond(200, content=chunk("Hel"), headers=STREAM_HEADERS)  # closed, no [DONE]
    tested = agent()
    session = tested.create_session()
    with pytest.raises(AgentServiceError, match="ended before the reply was complete"):
        [u async for u in tested.run("hi", session=session, stream=True)]
    assert session.state.get("messages", []) == []


async def test_a_finish_reason_completes_a_stream_without_done(endpoint: respx.Route) -> None:
    endpoint.respond(200, content=chunk("Hello", "stop"), headers=STREAM_HEADERS)
    session = agent().create_session()
    assert [u.text async for u in agent().run("hi", session=session, stream=True)] == ["Hello"]
    assert session.state["messages"][-1] == ChatMessage("assistant", "Hello")


async def test_multi_line_data_fields_are_one_event(endpoint: respx.Route) -> None:
    body = {"choices": [{"index": 0, "delta": {"content": "joined"}, "finish_reason": "stop"}]}
    text = json.dumps(body, indent=1)  # a JSON document over several data: lines
    frame = "".join(f"data: {line}\n" for line in text.splitlines()) + "\n"
    endpoint.respond(200, content=": keep-alive comment\n\n" + frame + "data: [DONE]\n\n",
                     headers=STREAM_HEADERS)
    assert [u.text async for u in agent().run("hi", stream=True)] == ["joined"]


def test_negative_retry_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        agent(max_retries=-1)
