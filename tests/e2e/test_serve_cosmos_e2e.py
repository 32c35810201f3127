"""End to end on Azure Cosmos DB: ``serve --storage cosmos:`` (settings from the environment)
keeps a paused conversation across a server restart, and ``checkpoints ls --storage cosmos:``
finds what it wrote. Runs against the local emulator."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from typing import Any

import httpx
import pytest
from cosmos_emulator import CosmosEmulator


@pytest.fixture
def cosmos_env(cosmos_emulator: CosmosEmulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented CHECKFLOW_COSMOS_* variables, naming a fresh database on the emulator."""
    monkeypatch.setenv("CHECKFLOW_COSMOS_ENDPOINT", cosmos_emulator.endpoint)
    monkeypatch.setenv("CHECKFLOW_COSMOS_KEY", cosmos_emulator.key)
    monkeypatch.setenv("CHECKFLOW_COSMOS_DATABASE", f"db-{uuid.uuid4().hex}")


async def test_a_paused_conversation_survives_a_restart_on_cosmos(
    cosmos_env: None, start_server: Any
) -> None:
    first = start_server("samples.approval:workflow", "cosmos:")
    runs = "/v1/conversations/order-9/runs"
    async with httpx.AsyncClient(timeout=60) as client:
        assert (await client.get(f"{first.url}/readyz")).status_code == 200
        paused = (await client.post(first.url + runs, json={"message": "owls"})).json()
        assert paused["status"] == "awaiting_responses"
        request_id = paused["pending_requests"][0]["request_id"]
        first.stop()
        second = start_server("samples.approval:workflow", "cosmos:")
        done = await client.post(second.url + runs, json={"responses": {request_id: True}})
        assert done.json()["outputs"] == ["published: Five things to know about owls."]
        snapshots = (await client.get(f"{second.url}/v1/conversations/order-9/snapshots")).json()
        assert len(snapshots["snapshots"]) == 5  # 3 for the pause, 2 for the answer
    listed = subprocess.run(
        [sys.executable, "-m", "checkflow", "checkpoints", "ls", "--storage", "cosmos:", "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    assert json.loads(listed.stdout) == [done.json()["resume_token"]["checkpoint_id"]]
