"""Tools in this process (httpx over ASGI): what a request's function tools write to the
workflow's shared state, an agent host refusing them, and an approval sent for a request that
is not one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from checkflow.adapters.foundry import FoundryAdapter
from checkflow.agents import CLIENT_TOOLS_KEY, ClientTool, ScriptedAgent
from checkflow.hosting import AgentHost, Host, WorkflowHost, create_app
from checkflow.workflows import inspect_shared_state
from samples.support import workflow as support
from tests.adapters.foundry.foundry_flows import workflow as flows

CONFIRM: dict[str, Any] = {
    "type": "function", "name": "confirm_with_user", "description": "Ask the user.",
    "parameters": {"type": "object", "properties": {"question": {"type": "string"}},
                   "required": ["question"]}}


async def _client(host: Host) -> httpx.AsyncClient:
    app = create_app(host, adapters=[FoundryAdapter()])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                             base_url="http://tools.test", timeout=30)


@pytest.fixture
async def support_host() -> AsyncIterator[tuple[WorkflowHost, httpx.AsyncClient]]:
    host = WorkflowHost(support)
    async with await _client(host) as client:
        yield host, client


async def _tools_at_head(host: WorkflowHost, conversation_id: str) -> Any:
    checkpoint, _ = await host.get_checkpoint(conversation_id)
    assert checkpoint.head_snapshot is not None
    return inspect_shared_state(checkpoint.head_snapshot)[CLIENT_TOOLS_KEY]


async def test_every_turn_writes_the_tools_it_declares_an_empty_list_when_none(
    support_host: tuple[WorkflowHost, httpx.AsyncClient],
) -> None:
    host, client = support_host
    paused = (await client.post("/responses", json={
        "input": "please call confirm_with_user", "tools": [CONFIRM, {"type": "web_search"}],
    })).json()
    conversation = paused["conversation"]["id"]
    assert await _tools_at_head(host, conversation) == [ClientTool(
        name="confirm_with_user", description="Ask the user.", parameters=CONFIRM["parameters"])]
    (call,) = paused["output"]
    done = await client.post("/responses", json={
        "previous_response_id": paused["id"],
        "input": [{"type": "function_call_output", "call_id": call["call_id"],
                   "output": "yes"}]})
    assert done.status_code == 200, done.text
    assert done.json()["output"][0]["content"][0]["text"] == "Your confirm_with_user said: yes"
    assert await _tools_at_head(host, conversation) == []  # the answer declared none


async def test_an_agent_host_refuses_function_tools_before_it_runs() -> None:
    async with await _client(AgentHost(ScriptedAgent("bot", ["hi", "hi"]))) as client:
        refused = await client.post("/responses", json={"input": "x", "tools": [CONFIRM]})
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["param"] == "tools" and "client tools" in error["message"]
        other = await client.post("/responses", json={"input": "x",
                                                      "tools": [{"type": "web_search"}]})
        assert other.status_code == 200, other.text  # no function tools: nothing to refuse


async def test_an_approval_for_a_request_that_takes_text_is_a_400_naming_it() -> None:
    async with await _client(WorkflowHost(flows)) as client:
        paused = (await client.post("/responses", json={"input": "pair:x"})).json()
        approve, note = (item.get("call_id") or item["id"] for item in paused["output"])
        refused = await client.post("/responses", json={
            "previous_response_id": paused["id"],
            "input": [{"type": "mcp_approval_response", "approval_request_id": note,
                       "approve": True, "reason": "fine"}]})
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["code"] == "invalid_function_call_output"
        assert f"mcp_approval_response for call {note}" in error["message"]
        done = await client.post("/responses", json={
            "previous_response_id": paused["id"], "input": [
                {"type": "mcp_approval_response", "approval_request_id": approve,
                 "approve": True},
                {"type": "function_call_output", "call_id": note, "output": "n"}]})
        assert done.status_code == 200, done.text
        assert done.json()["output"][0]["content"][0]["text"] == "published: x (n)"
