"""Hosting on Azure Cosmos DB: two hosts (think two servers) share one conversation.

Shows: ``WorkflowHost`` keeps each conversation's session and checkpoint in Cosmos DB, so the
host that answers a paused conversation need not be the one that started it. The workflow is
``samples/approval.py``'s.

Run it against an account or the local emulator, with the variables ``serve --storage cosmos:``
reads (``CHECKFLOW_COSMOS_ENDPOINT``, ``CHECKFLOW_COSMOS_KEY``, optionally
``CHECKFLOW_COSMOS_DATABASE`` and ``CHECKFLOW_COSMOS_VERIFY_TLS=0`` for the emulator's
self-signed certificate): ``python samples/cosmos_hosting.py``. Each run starts a new
conversation (``article-`` and a random suffix) in the same containers. The test suite starts
the emulator (``tests/cosmos_emulator.py``) and runs it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

from checkflow import WorkflowHost
from checkflow.storage.cosmos import CosmosCheckpointStorage, CosmosSessionStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from samples.approval import workflow  # the repository root is on the path now


async def main() -> list[str]:
    env = os.environ
    endpoint, key = env["CHECKFLOW_COSMOS_ENDPOINT"], env["CHECKFLOW_COSMOS_KEY"]
    database = env.get("CHECKFLOW_COSMOS_DATABASE", "checkflow-samples")
    tls = {} if env.get("CHECKFLOW_COSMOS_VERIFY_TLS", "1") != "0" else {
        "connection_verify": False}
    async with (
        await CosmosCheckpointStorage.from_endpoint(
            endpoint, key, database=database, container="checkpoints", **tls) as checkpoints,
        await CosmosSessionStore.from_endpoint(
            endpoint, key, database=database, container="sessions", **tls) as sessions,
    ):
        first = WorkflowHost(workflow, session_store=sessions, checkpoint_storage=checkpoints)
        second = WorkflowHost(workflow, session_store=sessions, checkpoint_storage=checkpoints)
        conversation = f"article-{uuid.uuid4().hex[:8]}"

        paused = await first.run(conversation, message="owls")
        (request_id,) = paused.pending_requests
        print(f"{conversation}: {paused.status.value}, asking {request_id}")

        done = await second.run(conversation, responses={request_id: True})
        print(f"{conversation}: {done.status.value}, outputs {done.outputs}")
        return list(done.outputs)


if __name__ == "__main__":
    asyncio.run(main())
