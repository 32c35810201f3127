"""Responses records are bounded like every adapter record: a response whose record would
pass the host's ``max_record_bytes`` is refused in OpenAI's error shape before it runs."""

from __future__ import annotations

import httpx

from checkflow.adapters.foundry import FoundryAdapter
from checkflow.hosting import WorkflowHost, create_app
from tests.e2e.a2a_e2e_flows import workflow


async def test_a_response_whose_record_passes_the_bound_is_refused_before_it_runs() -> None:
    host = WorkflowHost(workflow, max_record_bytes=20_000)
    app = create_app(host, adapters=[FoundryAdapter()])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://t") as client:
        small = await client.post("/responses", json={"model": "m", "input": "hi"})
        assert small.status_code == 200, small.text
        big = await client.post("/responses", json={"model": "m", "input": "x" * 30_000})
        assert big.status_code == 409
        error = big.json()["error"]
        assert error["code"] == "record_too_large" and error["type"] == "invalid_request_error"
        assert "over the limit of 20000" in error["message"]
        listed = (await client.get("/v1/conversations")).json()["conversations"]
        assert len(listed) == 1  # the refused response started no conversation
        again = await client.get(f"/responses/{small.json()['id']}")
        assert again.status_code == 200 and again.json()["status"] == "completed"
