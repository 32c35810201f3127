"""``RunAgentInput.state``: what a client may write of the shared state, and when it lands.

The write is committed with the turn's input, so everything that takes a turn back (a cancel,
a failure, a branch from before it) takes the write back with it; a refused write (a key the
client may not write, a value of the wrong type) is 422 before anything runs or commits.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from checkflow.adapters.agui import AGUIAdapter
from checkflow.adapters.agui._writes import StateWrites
from checkflow.agents import CLIENT_TOOLS_KEY, ClientTool, ScriptedAgent
from checkflow.errors import SharedStateWriteError
from checkflow.hosting import AgentHost, WorkflowHost, create_app
from checkflow.workflows import inspect_snapshot
from tests.e2e.agui_flows import SHARED_WRITABLE, Filters, shared
from tests.e2e.agui_wire import followed_states, parse_sse


def _user(text: str) -> dict[str, Any]:
    return {"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}


def _input(thread: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": f"run-{uuid.uuid4().hex[:8]}", "messages": messages,
            **extra}


@pytest.fixture
def host() -> WorkflowHost:
    return WorkflowHost(shared)


@pytest.fixture
async def client(host: WorkflowHost) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(host, adapters=[AGUIAdapter(writable_state=SHARED_WRITABLE)])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test") as c:
        yield c


async def _events(client: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = await client.post("/agui", json=body)
    assert response.status_code == 200, response.text
    return parse_sse(response.text)


def _said(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


def _state(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The state a client following the stream ends with (snapshots and deltas applied)."""
    return followed_states(events)[-1]


async def _head_state(host: WorkflowHost, thread: str) -> dict[str, Any]:
    checkpoint, token = await host.get_checkpoint(thread)
    return inspect_snapshot(checkpoint.get_snapshot(token.snapshot_id)).shared_state


# -- the write ------------------------------------------------------------------------------


async def test_a_client_writes_state_and_the_workflow_reads_it(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    state = {"theme": "dark", "filters": {"tags": ["a", "b"]}}
    events = await _events(client, _input("t", [_user("hi")], state=state))
    assert _said(events) == ["hi: theme=dark tags=a,b"]
    assert _state(events) == {"theme": "dark", "filters": {"tags": ["a", "b"], "limit": 10},
                              "turns": 1}
    stored = await _head_state(host, "t")
    assert stored["filters"] == Filters(["a", "b"])  # decoded to the declared type


async def test_the_write_is_in_the_turns_first_commit(host: WorkflowHost,
                                                     client: httpx.AsyncClient) -> None:
    await _events(client, _input("t", [_user("hi")], state={"theme": "dark"}))
    checkpoint, _ = await host.get_checkpoint("t")
    first = checkpoint.snapshots[0]
    assert first.metadata["boundary"] == "input_accepted"
    # the client's tools (none here) are written with it, in the same commit
    assert inspect_snapshot(first).shared_state == {"theme": "dark", CLIENT_TOOLS_KEY: []}


async def test_the_echoed_snapshot_changes_nothing_and_is_accepted(
    client: httpx.AsyncClient,
) -> None:
    first = await _events(client, _input("t", [_user("one")], state={"theme": "dark"}))
    echoed = _state(first)  # a client sends back its whole state, the workflow's keys too
    second = await _events(client, _input("t", [_user("two")], state=echoed))
    assert _said(second) == ["two: theme=dark tags=-"]
    assert _state(second)["turns"] == 2


async def test_a_resume_carries_a_write_too(client: httpx.AsyncClient) -> None:
    paused = await _events(client, _input("t", [_user("ask:x")], state={"theme": "dark"}))
    (interrupt,) = paused[-1]["outcome"]["interrupts"]
    answer = [{"interruptId": interrupt["id"], "status": "resolved", "payload": True}]
    done = await _events(client, _input("t", [], resume=answer,
                                        state={**_state(paused), "theme": "light"}))
    assert _said(done) == ["again: theme=light tags=-"]


async def test_without_the_option_state_is_ignored() -> None:
    app = create_app(WorkflowHost(shared), adapters=[AGUIAdapter()])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test") as client:
        events = await _events(client, _input("t", [_user("hi")],
                                              state={"theme": "dark", "anything": [1]}))
    assert _said(events) == ["hi: theme=plain tags=-"]
    assert _state(events) == {"turns": 1}


async def test_a_reconnect_writes_nothing_and_tells_the_real_state(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    await _events(client, _input("t", [_user("hi")], state={"theme": "dark"}))
    events = await _events(client, _input("t", [], state={"theme": "stale", "turns": 99}))
    assert _state(events) == {"theme": "dark", "turns": 1}
    assert (await _head_state(host, "t"))["theme"] == "dark"


# -- refused writes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "key", "reason"),
    [({"turns": 5}, "turns", "not a key clients may write"),
     ({"secret": "x"}, "secret", "not a key clients may write"),
     ({"theme": 3}, "theme", "Expected `str`, got `int`"),
     ({"filters": {"tags": "a"}}, "filters", "Expected `array`, got `str`")],
)
async def test_an_undeclared_key_or_a_wrong_type_is_422_naming_the_key_and_commits_nothing(
    host: WorkflowHost, client: httpx.AsyncClient, state: dict[str, Any], key: str,
    reason: str,
) -> None:
    await _events(client, _input("t", [_user("one")], state={"theme": "dark"}))
    before = await host.get_conversation("t")
    response = await client.post("/agui", json=_input("t", [_user("two")], state=state))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_state" and error["key"] == key
    assert reason in error["reason"] and repr(key) in error["message"]
    after = await host.get_conversation("t")
    assert after.resume_token == before.resume_token and after.outputs == before.outputs


async def test_a_wrong_type_deep_inside_names_where(client: httpx.AsyncClient) -> None:
    response = await client.post("/agui", json=_input(
        "t", [_user("x")], state={"filters": {"tags": ["a", 2]}}))
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "$.tags[1]"


async def test_a_state_that_is_not_an_object_is_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/agui", json=_input("t", [_user("x")], state=[1, 2]))
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["field"] == "state"


async def test_an_agent_host_keeps_no_shared_state_to_write() -> None:
    host = AgentHost(ScriptedAgent("bot", ["hello"]))
    app = create_app(host, adapters=[AGUIAdapter(writable_state={"theme": str})])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test") as client:
        response = await client.post("/agui", json=_input("t", [_user("hi")],
                                                          state={"theme": "dark"}))
        assert response.status_code == 422
        assert response.json()["error"]["key"] == "theme"
        ok = await _events(client, _input("t", [_user("hi")], state={}))
    assert _said(ok) == ["hello"]


# -- the client's tools ----------------------------------------------------------------------

CONFIRM = {"name": "confirm", "description": "Ask the user.",
           "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}


async def test_each_run_writes_its_tools_and_the_state_a_client_sees_never_shows_them(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    declared = await _events(client, _input("t", [_user("hi")], tools=[CONFIRM]))
    assert (await _head_state(host, "t"))[CLIENT_TOOLS_KEY] == [
        ClientTool(name="confirm", description="Ask the user.",
                   parameters=CONFIRM["parameters"])]
    none = await _events(client, _input("t", [_user("again")]))
    assert (await _head_state(host, "t"))[CLIENT_TOOLS_KEY] == []  # not offered again
    for events in (declared, none):
        assert all(CLIENT_TOOLS_KEY not in state for state in followed_states(events))
    refused = await client.post("/agui", json=_input(  # not a key a client may write
        "t", [_user("three")], state={CLIENT_TOOLS_KEY: [CONFIRM]}))
    assert refused.status_code == 422 and refused.json()["error"]["key"] == CLIENT_TOOLS_KEY


async def test_an_agent_host_is_offered_no_tools_and_runs_as_before() -> None:
    host = AgentHost(ScriptedAgent("bot", ["hello"]))
    app = create_app(host, adapters=[AGUIAdapter()])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test") as client:
        events = await _events(client, _input("t", [_user("hi")], tools=[CONFIRM]))
    assert _said(events) == ["hello"] and events[-1]["outcome"] == {"type": "success"}


# -- the write goes back with its turn ------------------------------------------------------


async def test_a_failed_turn_keeps_nothing_of_its_write(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    await _events(client, _input("t", [_user("one")], state={"theme": "dark"}))
    failed = await _events(client, _input("t", [_user("fail:x")], state={"theme": "light"}))
    assert failed[-1]["type"] == "RUN_ERROR"
    assert (await _head_state(host, "t"))["theme"] == "dark"


async def test_cancelling_a_paused_turn_takes_its_write_back(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    await _events(client, _input("t", [_user("one")], state={"theme": "dark"}))
    await _events(client, _input("t", [_user("ask:x")], state={"theme": "light"}))
    (paused,) = [t for t in await host.turns("t")][-1:]
    assert await host.cancel("t", turn_id=paused.turn_id)
    assert (await _head_state(host, "t"))["theme"] == "dark"
    events = await _events(client, _input("t", []))
    assert _state(events)["theme"] == "dark"


async def test_a_branch_from_before_a_write_does_not_have_it(client: httpx.AsyncClient) -> None:
    paused = await _events(client, _input("t", [_user("ask:x")], state={"theme": "dark"}))
    (interrupt,) = paused[-1]["outcome"]["interrupts"]
    pause_snapshot = interrupt["metadata"]["checkflow"]["resumeToken"]["snapshotId"]
    answer = [{"interruptId": interrupt["id"], "status": "resolved", "payload": True}]
    light = await _events(client, _input("t", [], resume=answer, state={"theme": "light"}))
    assert _said(light) == ["again: theme=light tags=-"]
    branch = {"checkflow": {"fromSnapshot": pause_snapshot}}
    again = await _events(client, _input("t", [], resume=answer, forwardedProps=branch,
                                         state=_state(light)))  # the client's newer copy
    assert _said(again) == ["again: theme=light tags=-"]  # its write, against the branch
    plain = await _events(client, _input("t", [], resume=answer, forwardedProps=branch))
    assert _said(plain) == ["again: theme=dark tags=-"]  # the branch's own state
    assert _state(plain)["theme"] == "dark"


# -- the declaration ------------------------------------------------------------------------


class _Unregistered:
    pass


@pytest.mark.parametrize(
    ("writable", "says"),
    [({"": str}, "non-empty string"), ({"k": object()}, "msgspec cannot decode"),
     ({"k": list[_Unregistered]}, "register it")],
)
def test_a_bad_declaration_is_refused_when_the_adapter_is_made(writable: Any, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        AGUIAdapter(writable_state=writable)


def test_json_equality_tells_true_from_1_and_not_1_from_1_0() -> None:
    writes = StateWrites({"n": float, "flag": bool | int})
    assert writes.writes({"n": 1, "flag": True}, {"n": 1.0, "flag": True}) == {}
    assert writes.writes({"flag": 1}, {"flag": True}) == {"flag": 1}
    with pytest.raises(SharedStateWriteError):
        StateWrites({}).writes({"other": True}, {"other": 1})
