"""samples/hosted.py: conversations reached over A2A, AG-UI, Responses and the native API."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "hosting"))

from served import served  # noqa: E402  (the hosting tests' uvicorn helper)


def build_app(root: Path, tracer_provider: TracerProvider) -> Any:
    sys.path.insert(0, str(ROOT))
    try:
        from samples.hosted import build_app
    finally:
        sys.path.remove(str(ROOT))
    return build_app(str(root), tracer_provider=tracer_provider,
                     meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]))


async def agui_run(client: httpx.AsyncClient, thread: str, **fields: Any) -> list[dict]:
    body = {"threadId": thread, "runId": "r", "messages": [], "state": {}, "tools": [],
            "context": [], "forwardedProps": {}, **fields}
    async with client.stream("POST", "/agui", json=body) as response:
        assert response.status_code == 200
        return [json.loads(line[5:]) async for line in response.aiter_lines()
                if line.startswith("data:")]


async def converse(client: httpx.AsyncClient, run: int) -> None:
    """Start over AG-UI, answer natively; ask over Responses; start over A2A, read natively."""
    events = await agui_run(client, f"article-{run}-1", runId=f"r{run}",
                            messages=[{"id": f"m{run}", "role": "user", "content": "owls"}])
    (interrupt,) = events[-1]["outcome"]["interrupts"]

    state = (await client.get(f"/v1/conversations/article-{run}-1")).json()
    assert [r["request_id"] for r in state["pending_requests"]] == [interrupt["id"]]
    answered = await client.post(f"/v1/conversations/article-{run}-1/runs",
                                 json={"responses": {interrupt["id"]: True}})
    assert answered.json()["outputs"] == ["published: Five things to know about owls."]

    response = (await client.post("/responses", json={"input": "bats"})).json()
    assert any(item["type"] == "mcp_approval_request" for item in response["output"])

    # an A2A context is a conversation too: a task started there is answered natively
    reply = (await client.post("/a2a", headers={"A2A-Version": "1.0"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
            "messageId": f"a2a-{run}", "role": "ROLE_USER", "contextId": f"article-{run}-2",
            "parts": [{"text": "bats"}]}}})).json()
    assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    state = (await client.get(f"/v1/conversations/article-{run}-2")).json()
    (pending,) = state["pending_requests"]
    assert pending["data"]["draft"] == "Five things to know about bats."
    card = await client.get("/.well-known/agent-card.json")
    assert card.status_code == 200


async def test_a_thread_started_over_agui_is_answered_over_the_native_api(
        tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with served(build_app(tmp_path, provider)) as (url, _), \
            httpx.AsyncClient(base_url=url, timeout=30) as client:
        await converse(client, 1)
    assert {p.name for p in tmp_path.iterdir()} == {"checkpoints", "sessions"}

    # the sample started again in its folder: the first server's conversations are there to
    # continue (the one the A2A task paused is answered), and new ones start as before
    async with served(build_app(tmp_path, provider)) as (url, _), \
            httpx.AsyncClient(base_url=url, timeout=30) as client:
        done = (await client.get("/v1/conversations/article-1-1")).json()
        assert done["outputs"] == ["published: Five things to know about owls."]
        (pending,) = (await client.get("/v1/conversations/article-1-2")).json()[
            "pending_requests"]
        answered = await client.post("/v1/conversations/article-1-2/runs",
                                     json={"responses": {pending["request_id"]: True}})
        assert answered.json()["outputs"] == ["published: Five things to know about bats."]
        await converse(client, 2)
    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    # each protocol's request span is an ancestor of the run it started (the A2A SDK may put
    # spans of its own, from the global provider, in between)
    traces = {s.name: s.context.trace_id for s in spans if s.name.startswith("POST ")}
    runs = {s.context.trace_id for s in spans if s.name == "workflow.run"}
    assert set(traces) == {"POST /a2a", "POST /agui", "POST /responses",
                           "POST /v1/conversations/{conversation_id}/runs"}
    assert set(traces.values()) <= runs
    direct = {by_id[s.parent.span_id].name for s in spans
              if s.name == "workflow.run" and s.parent and s.parent.span_id in by_id}
    assert {"POST /agui", "POST /responses"} <= direct
    assert {s.name for s in spans} >= {"workflow.superstep", "executor.process",
                                       "checkpoint.commit"}
