"""A paused human-in-the-loop workflow kept in Cosmos DB resumes in a fresh process.

Each run is its own Python process (``cosmos_e2e_worker.py``) with its own clients: the only
thing the second process shares with the first is what the first left in Cosmos DB - the
conversation's session in ``CosmosSessionStore`` and its checkpoint in
``CosmosCheckpointStorage``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from cosmos_emulator import CosmosEmulator, cosmos_client

from checkflow.storage.cosmos import CosmosCheckpointStorage

WORKER = Path(__file__).with_name("cosmos_e2e_worker.py")


async def _run_in_fresh_process(emulator: CosmosEmulator, *args: str) -> dict[str, Any]:
    command = [sys.executable, str(WORKER), emulator.endpoint, emulator.key, *args]
    done = await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


async def test_a_paused_workflow_resumes_from_cosmos_in_a_fresh_process(
    cosmos_emulator: CosmosEmulator,
) -> None:
    database = f"db-{uuid.uuid4().hex}"
    try:
        paused = await _run_in_fresh_process(cosmos_emulator, database, "conv-1", "start")
        assert (paused["status"], paused["outputs"]) == ("awaiting_responses", [])
        (request_id,) = paused["pending"]
        answers = json.dumps({request_id: True})
        resumed = await _run_in_fresh_process(
            cosmos_emulator, database, "conv-1", "resume", answers
        )
        assert resumed["pid"] != paused["pid"]
        assert resumed["error"] is None
        assert resumed["status"] == "idle"
        assert resumed["outputs"] == ["published: Five things to know about cosmos."]
        await _assert_state_lives_in_cosmos(cosmos_emulator, database)
    finally:
        async with cosmos_client(cosmos_emulator) as client:
            await client.delete_database(database)


async def _assert_state_lives_in_cosmos(emulator: CosmosEmulator, database: str) -> None:
    async with cosmos_client(emulator) as client:
        db = client.get_database_client(database)
        storage = CosmosCheckpointStorage(db.get_container_client("checkpoints"))
        (checkpoint_id,) = await storage.list_checkpoint_ids()
        checkpoint = await storage.load(checkpoint_id)
        head = checkpoint.head_snapshot
        assert head is not None
        assert head.metadata["status"] == "idle"
        assert len(checkpoint.ancestors(head.snapshot_id)) >= 4  # entry, pause, answer, end
        query = "SELECT c.data FROM c WHERE c.kind = 'session'"
        (session,) = [row async for row in db.get_container_client("sessions").query_items(query)]
        assert checkpoint_id in session["data"]  # the conversation's session references it
