"""The adapter in this process: ``create_app`` served by uvicorn on loopback, driven by the
``openai`` client. Covers what needs a host built in the test: an agent host, the container
contract (``FoundryAdapter(container=True)``) and readiness against a failing store."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import httpx
import openai
import pytest
from foundry_schema import assert_well_formed, validate_event, validate_response
from foundry_serving import serving as _serving
from openai import OpenAI

from checkflow.adapters.foundry import (
    ApprovalRequest,
    FoundryAdapter,
    default_adapter,
    header_principal,
)
from checkflow.adapters.foundry._ids import response_id
from checkflow.agents import ChatMessage, ScriptedAgent
from checkflow.hosting import AgentHost, WorkflowHost, create_app
from checkflow.sessions import InMemorySessionStore
from checkflow.workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


def _client(url: str, **headers: str) -> OpenAI:
    return OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=30,
                  default_headers=headers or None)


def _create(client: OpenAI, **params: Any) -> dict[str, Any]:
    raw = client.responses.with_raw_response.create(**params)
    body = raw.http_response.json()
    validate_response(body)
    return body


def _text(body: dict[str, Any]) -> str:
    return "".join(p["text"] for i in body["output"] if i["type"] == "message"
                   for p in i["content"])


class Held(Executor):
    """Holds a run whose message is "hold" until the test sets ``RELEASE`` (10 s at most)."""

    @handler
    async def held(self, text: str, ctx: WorkflowContext) -> None:
        if text == "hold":
            ENTERED.set()
            for _ in range(1000):
                if RELEASE.is_set():
                    break
                await asyncio.sleep(0.01)
        await ctx.yield_output(text)


ENTERED, RELEASE = threading.Event(), threading.Event()
_held = Held("held")
held_workflow = WorkflowBuilder(start_executor=_held, name="held").build()


class Chat(Executor):
    @handler
    async def chat(self, messages: list[ChatMessage], ctx: WorkflowContext) -> None:
        await ctx.yield_output({"roles": [m.role for m in messages],
                                "texts": [m.text for m in messages]})


_chat = Chat("chat")
chat_workflow = WorkflowBuilder(start_executor=_chat, name="chat").build()


def test_default_adapter_is_a_plain_foundry_adapter() -> None:
    adapter = default_adapter()
    assert isinstance(adapter, FoundryAdapter) and adapter.container is False


def test_an_agent_streams_its_reply_and_continues_its_conversation() -> None:
    host = AgentHost(ScriptedAgent("bot", ["hello there, friend", "again"]))
    with _serving(create_app(host, adapters=[FoundryAdapter()])) as url:
        client = _client(url)
        events = [e.to_dict() for e in client.responses.create(input="hi", stream=True)]
        for event in events:
            validate_event(event)
        assert_well_formed(events)
        deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
        assert "".join(deltas) == "hello there, friend"
        first = events[-1]["response"]
        assert _text(first) == "hello there, friend"
        second = _create(client, previous_response_id=first["id"], input="more")
        assert _text(second) == "again"
        assert second["conversation"] == first["conversation"]
        with pytest.raises(openai.BadRequestError) as caught:  # no snapshots to branch from
            client.responses.create(previous_response_id=first["id"], input="x",
                                    metadata={"checkflow.branch": "true"})
        assert caught.value.response.json()["error"]["param"] == "metadata.checkflow.branch"


def test_a_chat_workflow_gets_instructions_as_a_system_message_and_json_outputs() -> None:
    with _serving(create_app(WorkflowHost(chat_workflow), adapters=[FoundryAdapter()])) as url:
        body = _create(_client(url), input=[{"role": "developer", "content": "d"},
                                            {"role": "user", "content": "u"}],
                       instructions="be brief")
    assert _text(body) == '{"roles":["system","system","user"],"texts":["be brief","d","u"]}'


def test_in_a_container_the_user_header_is_the_principal_and_the_session_the_conversation(
) -> None:
    host = WorkflowHost(chat_workflow)
    with _serving(create_app(host, adapters=[FoundryAdapter(container=True)])) as url:
        alice = _client(url, **{"x-agent-user-id": "alice", "x-agent-session-id": "s-1"})
        body = _create(alice, input="hi")
        assert body["conversation"] == {"id": "s-1"}
        assert alice.responses.retrieve(body["id"]).id == body["id"]
        for other in ({"x-agent-user-id": "bob"}, {}):
            with pytest.raises(openai.NotFoundError):
                _client(url, **other).responses.retrieve(body["id"])


def test_an_authenticated_principal_wins_over_the_user_header() -> None:
    def authenticate(request: Any) -> str | None:
        return str(request.headers.get("authorization", "")).removeprefix("Bearer ") or None

    app = create_app(WorkflowHost(chat_workflow), adapters=[FoundryAdapter(container=True)],
                     authenticate=authenticate)
    with _serving(app) as url:
        carol = OpenAI(base_url=url, api_key="carol", max_retries=0,
                       default_headers={"x-agent-user-id": "mallory"})
        body = carol.responses.create(input="hi")
        with pytest.raises(openai.NotFoundError):
            OpenAI(base_url=url, api_key="mallory", max_retries=0).responses.retrieve(body.id)
        assert carol.responses.retrieve(body.id).id == body.id


def test_header_principal_reads_the_user_header_only() -> None:
    class _Request:
        def __init__(self, headers: dict[str, str]) -> None:
            self.headers = headers

    assert header_principal(_Request({"x-agent-user-id": " u1 "})) == "u1"  # type: ignore[arg-type]
    assert header_principal(_Request({"x-agent-user-id": ""})) is None  # type: ignore[arg-type]
    assert header_principal(_Request({})) is None  # type: ignore[arg-type]


class _Unreachable(InMemorySessionStore):
    async def get(self, session_id: str) -> Any:
        raise OSError("the session store is unreachable")


def test_readiness_is_healthy_only_while_the_stores_answer() -> None:
    adapters = [FoundryAdapter()]
    with _serving(create_app(WorkflowHost(chat_workflow), adapters=adapters)) as url:
        ready = httpx.get(f"{url}/readiness")
        assert (ready.status_code, ready.json()) == (200, {"status": "healthy"})
    host = WorkflowHost(chat_workflow, session_store=_Unreachable())
    with _serving(create_app(host, adapters=[FoundryAdapter()])) as url:
        ready = httpx.get(f"{url}/readiness")
        assert ready.status_code == 503 and ready.json()["status"] == "unhealthy"


def test_a_store_that_breaks_mid_request_is_an_openai_shaped_500() -> None:
    host = WorkflowHost(chat_workflow, session_store=_Unreachable())
    with _serving(create_app(host, adapters=[FoundryAdapter()])) as url:
        response = httpx.get(f"{url}/responses/{response_id('c-1', '0' * 32)}")
    assert response.status_code == 500
    assert response.json() == {"error": {"message": "internal server error",
                                         "type": "server_error", "param": None, "code": None}}


def test_an_unknown_route_under_the_prefix_is_an_openai_shaped_404() -> None:
    with _serving(create_app(WorkflowHost(chat_workflow), adapters=[FoundryAdapter()])) as url:
        response = httpx.get(f"{url}/responses/r1/nothing-here")
    assert response.status_code == 404
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}


def test_a_client_leaving_a_stream_cancels_the_run_and_the_response_says_so() -> None:
    ENTERED.clear()
    RELEASE.clear()
    with _serving(create_app(WorkflowHost(held_workflow), adapters=[FoundryAdapter()])) as url:
        body = {"input": "hold", "stream": True, "conversation": "left-1"}
        with httpx.stream("POST", f"{url}/responses", json=body, timeout=30) as response:
            lines = (line for line in response.iter_lines() if line.startswith("data: "))
            created = json.loads(next(lines).removeprefix("data: "))
            assert ENTERED.wait(10)
        response_id = created["response"]["id"]
        client = _client(url)
        status = "in_progress"
        deadline = time.monotonic() + 10
        while status == "in_progress" and time.monotonic() < deadline:  # the server's outcome
            status = client.responses.retrieve(response_id).status
            RELEASE.wait(0.02)
        assert status == "cancelled"
        assert _text(_create(client, input="next", conversation="left-1")) == "next"


def test_in_a_container_responses_name_the_agent_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FOUNDRY_AGENT_NAME", "alpha")
    monkeypatch.setenv("FOUNDRY_AGENT_VERSION", "7")
    app = create_app(WorkflowHost(chat_workflow), adapters=[FoundryAdapter(container=True)])
    monkeypatch.setenv("FOUNDRY_AGENT_VERSION", "8")  # read when the routes were built
    with _serving(app) as url:
        client = _client(url)
        body = _create(client, input="hi")
        assert body["agent_reference"] == {"type": "agent_reference", "name": "alpha",
                                           "version": "7"}
        sent = {"type": "agent_reference", "name": "beta"}
        named = _create(client, input="hi", extra_body={"agent_reference": sent})
        assert named["agent_reference"] == sent  # the request's own, as Foundry's host
        events = [e.to_dict() for e in client.responses.create(input="x", stream=True)]
        assert_well_formed(events)
        assert {e["response"]["agent_reference"]["name"] for e in events
                if "response" in e} == {"alpha"}
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(input="hi", extra_body={"agent_reference": {"name": ""}})
        assert caught.value.response.json()["error"]["param"] == "agent_reference.name"
    monkeypatch.delenv("FOUNDRY_AGENT_NAME")
    monkeypatch.delenv("FOUNDRY_AGENT_VERSION")
    app = create_app(WorkflowHost(chat_workflow), adapters=[FoundryAdapter(container=True)])
    with _serving(app) as url:
        plain = _create(_client(url), input="hi")
        assert plain["agent_reference"] == {"type": "agent_reference", "name": "chat"}


def test_outside_a_container_agent_reference_is_null_unless_the_request_names_one() -> None:
    with _serving(create_app(WorkflowHost(chat_workflow), adapters=[FoundryAdapter()])) as url:
        client = _client(url)
        body = _create(client, input="hi")
        assert body["agent_reference"] is None
        sent = {"type": "agent_reference", "name": "beta", "version": "2"}
        named = _create(client, input="hi", extra_body={"agent_reference": sent})
        assert named["agent_reference"] == sent
        stored = client.responses.with_raw_response.retrieve(named["id"]).http_response.json()
        assert stored["agent_reference"] == sent  # recorded with the turn


def _raw_create(client: OpenAI, **params: Any) -> tuple[dict[str, Any], Any]:
    raw = client.responses.with_raw_response.create(**params)
    body = raw.http_response.json()
    validate_response(body)
    return body, raw.http_response.headers


def test_in_a_container_the_session_selects_the_conversation_and_is_sent_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FOUNDRY_AGENT_SESSION_ID", raising=False)
    host = WorkflowHost(chat_workflow)
    with _serving(create_app(host, adapters=[FoundryAdapter(container=True)])) as url:
        client = _client(url, **{"x-agent-session-id": "from-header"})
        first, headers = _raw_create(client, input="a", extra_body={"agent_session_id": "s-9"})
        assert first["conversation"] == {"id": "s-9"}  # the body wins over the header
        assert first["agent_session_id"] == headers["x-agent-session-id"] == "s-9"
        second, _ = _raw_create(client, input="b", extra_body={"agent_session_id": "s-9"})
        assert second["conversation"] == {"id": "s-9"}  # the same conversation, advanced
        assert second["id"] != first["id"]
        by_header, headers = _raw_create(client, input="c")
        assert by_header["conversation"] == {"id": "from-header"}
        assert by_header["agent_session_id"] == headers["x-agent-session-id"] == "from-header"
        with client.responses.with_streaming_response.create(
                input="d", stream=True, extra_body={"agent_session_id": "s-10"}) as streamed:
            assert streamed.headers["x-agent-session-id"] == "s-10"
            lines = [line for line in streamed.iter_lines() if line.startswith("data: ")]
        final = json.loads(lines[-1].removeprefix("data: "))["response"]
        assert final["agent_session_id"] == "s-10" and final["conversation"] == {"id": "s-10"}
        stored = client.responses.with_raw_response.retrieve(first["id"])
        assert stored.http_response.json()["agent_session_id"] == "s-9"
        assert stored.http_response.headers["x-agent-session-id"] == "s-9"
        plain = _client(url)
        followed, headers = _raw_create(plain, input="e", previous_response_id=second["id"])
        assert followed["conversation"] == {"id": "s-9"}  # its conversation names its session
        assert followed["agent_session_id"] == headers["x-agent-session-id"] == "s-9"
        named, _ = _raw_create(plain, input="f", conversation="talk-3")
        assert named["agent_session_id"] == "talk-3"
        with pytest.raises(openai.BadRequestError) as caught:
            plain.responses.create(input="g", extra_body={"agent_session_id": ""})
        assert caught.value.response.json()["error"]["param"] == "agent_session_id"


def test_in_a_container_without_a_session_sent_the_containers_own_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FOUNDRY_AGENT_SESSION_ID", "env-session")
    host = WorkflowHost(chat_workflow)
    with _serving(create_app(host, adapters=[FoundryAdapter(container=True)])) as url:
        body, headers = _raw_create(_client(url), input="a")
    assert body["conversation"] == {"id": "env-session"}
    assert body["agent_session_id"] == headers["x-agent-session-id"] == "env-session"


def test_outside_a_container_there_is_no_session() -> None:
    with _serving(create_app(WorkflowHost(chat_workflow), adapters=[FoundryAdapter()])) as url:
        body, headers = _raw_create(_client(url, **{"x-agent-session-id": "ignored"}),
                                    input="a", extra_body={"agent_session_id": "ignored"})
    assert "agent_session_id" not in body and "x-agent-session-id" not in headers
    assert body["conversation"]["id"].startswith("conv_")


class _Deploy(Executor):
    @handler
    async def ask(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.request_info(ApprovalRequest(f"deploy {text}?", {"env": "prod"}),
                               response_type=bool)

    @response_handler
    async def answered(self, request: ApprovalRequest, approve: bool,
                       ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"{'deployed' if approve else 'held'}: {request.description}")


def test_an_explicit_approval_request_is_answered_by_an_approval_response() -> None:
    workflow = WorkflowBuilder(start_executor=_Deploy("deploy"), name="deploy").build()
    with _serving(create_app(WorkflowHost(workflow), adapters=[FoundryAdapter()])) as url:
        client = _client(url)
        paused = _create(client, input="v2")
        (item,) = paused["output"]
        assert item["type"] == "mcp_approval_request"
        assert json.loads(item["arguments"])["data"] == {"description": "deploy v2?",
                                                         "details": {"env": "prod"}}
        done = _create(client, previous_response_id=paused["id"], input=[
            {"type": "mcp_approval_response", "approval_request_id": item["id"],
             "approve": False}])
        assert _text(done) == "held: deploy v2?"
