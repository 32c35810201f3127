"""Store trips of a Responses turn that continues the latest response with a new message.

The answering turn (a reply) is measured with the other protocols in
``tests/hosting/test_turn_trips.py``; this is the usual chat chaining, a message with
``previous_response_id``: one checkpoint load (the host runs on the checkpoint
``Host.turns`` read to see that the previous response is the latest), nothing written after
the commit but the conversation's own session. Its session reads besides the lease's are two:
``turns`` and the tombstone of a deleted previous response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from checkflow.adapters.foundry import FoundryAdapter
from checkflow.hosting import WorkflowHost, create_app
from checkflow.sessions import InMemorySessionStore
from checkflow.storage import InMemoryCheckpointStorage
from tests.adapters.foundry.foundry_flows import workflow
from tests.hosting.store_counters import CallLog, Trips, counting_stores


@pytest.fixture
async def served() -> AsyncIterator[tuple[httpx.AsyncClient, CallLog]]:
    log, sessions, storage = counting_stores(InMemorySessionStore(),
                                             InMemoryCheckpointStorage())
    host = WorkflowHost(workflow, session_store=sessions, checkpoint_storage=storage)
    app = create_app(host, adapters=[FoundryAdapter()])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://trips.test", timeout=30) as client:
        yield client, log


async def test_a_message_after_the_latest_response_loads_the_checkpoint_once(
    served: tuple[httpx.AsyncClient, CallLog],
) -> None:
    client, log = served
    first = (await client.post("/responses", json={"input": "a"})).json()
    log.clear()
    reply = await client.post("/responses", json={"input": "b",
                                                  "previous_response_id": first["id"]})
    assert reply.status_code == 200, reply.text
    assert reply.json()["output"][0]["content"][0]["text"] == "B"
    trips = Trips.of(log, first["conversation"]["id"])
    assert trips.loads == 1, log.render()
    assert not trips.late_writes, log.render()
    assert len(trips.other_reads) == 2, log.render()  # turns() and the tombstone
