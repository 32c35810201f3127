"""End to end on Azure Cosmos DB (the local emulator): responses are turns of checkpoints in
Cosmos, so a pause survives a restart, is answered once and branches when asked to."""

from __future__ import annotations

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
    (call,) = [item for item in paused["output"] if item["type"] == "function_call"]
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
