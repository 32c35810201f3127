"""One hosted run against Cosmos DB in a process of its own, for the end-to-end test.

``python cosmos_e2e_worker.py ENDPOINT KEY DATABASE CONVERSATION start``
``python cosmos_e2e_worker.py ENDPOINT KEY DATABASE CONVERSATION resume '{"<request>": true}'``

Imports the approval sample's workflow afresh, opens the checkpoint storage and the session
store from the endpoint, runs the conversation once through ``WorkflowHost`` and prints one
JSON line: the status, the pending request ids and this run's outputs. Nothing survives between
two runs but what is in Cosmos DB.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: samples/

from checkflow.hosting import WorkflowHost
from checkflow.storage.cosmos import CosmosCheckpointStorage, CosmosSessionStore
from samples.approval import workflow


async def run_once(
    endpoint: str, key: str, database: str, conversation: str, stage: str, answers: str
) -> dict[str, Any]:
    options: dict[str, Any] = {"database": database}
    storage = await CosmosCheckpointStorage.from_endpoint(
        endpoint, key, container="checkpoints", **options
    )
    sessions = await CosmosSessionStore.from_endpoint(
        endpoint, key, container="sessions", **options
    )
    async with storage, sessions:
        host = WorkflowHost(workflow, session_store=sessions, checkpoint_storage=storage)
        if stage == "start":
            result = await host.run(conversation, message="cosmos")
        else:
            result = await host.run(conversation, responses=json.loads(answers))
    return {
        "pid": os.getpid(),
        "status": str(result.status),
        "pending": sorted(result.pending_requests),
        "outputs": result.outputs,
        "error": repr(result.error) if result.error else None,
    }


if __name__ == "__main__":
    endpoint, key, database, conversation, stage, *rest = sys.argv[1:]
    outcome = asyncio.run(
        run_once(endpoint, key, database, conversation, stage, rest[0] if rest else "{}")
    )
    print(json.dumps(outcome), flush=True)
