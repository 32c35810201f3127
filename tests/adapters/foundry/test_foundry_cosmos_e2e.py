"""End to end on Azure Cosmos DB (the local emulator): responses are turns of checkpoints in
Cosmos, so a pause survives a restart, is answered once and branches when asked to, and a
second server follows (superstep by superstep) and cancels a response the first one runs."""

from __future__ import annotations

import time
import uuid
from typing import Any

import openai
import pytest
from cosmos_emulator import CosmosEmulator
from foundry_schema import validate_response
from openai import OpenAI


@pytest.fixture
def cosmos_env(cosmos_emulator: CosmosEmulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHECKFLOW_COSMOS_ENDPOINT", cosmos_emulator.endpoint)
    monkeypatch.setenv("CHECKFLOW_COSMOS_KEY", cosmos_emulator.key)
    monkeypatch.setenv("CHECKFLOW_COSMOS_DATABASE", f"db-{uuid.uuid4().hex}")


def _create(client: OpenAI, **params: Any) -> dict[str, Any]:
    body = client.responses.with_raw_response.create(**params).http_response.json()
    validate_response(body)
    return body


def _client(server: Any) -> OpenAI:
    return OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=60)


def test_a_paused_response_branches_after_a_restart_on_cosmos(
    cosmos_env: None, start_foundry: Any,
) -> None:
    first = start_foundry(storage="cosmos:")
    paused = _create(_client(first), input="ask:owls")
    (call,) = [{**item, "call_id": item["id"]} for item in paused["output"]
               if item["type"] == "mcp_approval_request"]  # a yes/no question
    first.stop()
    client = _client(start_foundry(storage="cosmos:"))
    assert client.responses.with_raw_response.retrieve(
        paused["id"]).http_response.json() == paused
    answers = {}
    for value, metadata in (("true", {}), ("false", {"checkflow.branch": "true"})):
        done = _create(client, previous_response_id=paused["id"], metadata=metadata, input=[
            {"type": "function_call_output", "call_id": call["call_id"], "output": value}])
        answers[value] = done["output"][0]["content"][0]["text"]
    assert answers == {"true": "published: owls", "false": "dropped: owls"}
    with pytest.raises(openai.ConflictError) as late:  # a third answer that is no branch
        client.responses.create(previous_response_id=paused["id"], input=[
            {"type": "function_call_output", "call_id": call["call_id"], "output": "false"}])
    assert late.value.response.json()["error"]["code"] == "already_answered"


def test_a_second_server_follows_and_cancels_a_running_response_on_cosmos(
    cosmos_env: None, start_foundry: Any, gates: Any,
) -> None:
    owner, other = start_foundry(storage="cosmos:"), start_foundry(storage="cosmos:")
    started = _create(_client(owner), input="steps:c1", background=True)
    gates.wait_entered("c1")  # "one" is committed; the next superstep is held
    seen: list[str] = []
    with _client(other).responses.retrieve(started["id"], stream=True) as stream:
        for event in stream:
            seen.append(event.type)
            if event.type == "response.output_item.done":
                gates.release("c1")  # the follower saw "one" while the run was held
                # (were it told only at the end, the held run would fail at its gate's
                # deadline and the stream end response.failed)
    assert seen[-1] == "response.completed" and "response.output_item.done" in seen
    held = _create(_client(owner), input="hold:c2", background=True,
                   conversation=started["conversation"]["id"])
    gates.wait_entered("c2")
    began = time.monotonic()
    cancelled = _client(other).responses.cancel(held["id"])
    assert cancelled.status == "cancelled" and time.monotonic() - began < 10
    gates.release("c2")
    assert _client(owner).responses.retrieve(held["id"]).status == "cancelled"
