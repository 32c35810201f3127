"""Tool calls are ``execute_tool`` spans (OpenTelemetry GenAI names); approvals span events."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import respx
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from checkflow.agents import AgentExecutor, OpenAIChatAgent, tool
from checkflow.telemetry import OpenTelemetryInterceptor
from checkflow.workflows import WorkflowBuilder
from tests.llm_script import BASE_URL, Model, call, reply


@tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}"


@tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("database down")


@tool(approval="always")
def refund(order_id: str) -> str:
    """Refund an order."""
    return "refunded"


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL) as router:
        yield router


async def test_each_call_is_an_execute_tool_span_and_approvals_are_events(
        mock: respx.MockRouter, exporter: InMemorySpanExporter,
        interceptor: OpenTelemetryInterceptor) -> None:
    mock.post("/chat/completions").mock(side_effect=Model([
        reply(None, call("c1", "lookup", order_id="7"), call("c2", "broken"),
              call("c3", "refund", order_id="7")),
        reply("Done.")]))
    agent = OpenAIChatAgent("m", name="desk", base_url=BASE_URL, api_key="k",
                            tools=[lookup, broken, refund])
    workflow = WorkflowBuilder(AgentExecutor(agent, output_response=True)).build()
    checkpoint = workflow.create_checkpoint()
    await workflow.run("go", checkpoint=checkpoint, interceptors=[interceptor])
    await workflow.run(responses={"c3": {"approved": False, "reason": "no"}},
                       checkpoint=checkpoint, interceptors=[interceptor])

    spans = exporter.get_finished_spans()
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans
             if s.name.startswith("execute_tool")}
    assert sorted(tools) == ["c1", "c2"]  # the denied call never ran
    assert tools["c1"].name == "execute_tool lookup"
    assert dict(tools["c1"].attributes) == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "c1", "gen_ai.tool.type": "function"}
    assert tools["c1"].status.status_code is StatusCode.UNSET
    assert tools["c2"].status.status_code is StatusCode.ERROR
    assert tools["c2"].attributes["error.type"] == "RuntimeError"
    executor_spans = {s.context.span_id: s for s in spans if s.name.startswith("executor")}
    assert tools["c1"].parent is not None and tools["c1"].parent.span_id in executor_spans
    outcomes = [e.attributes["checkflow.tool.approval"] for s in spans for e in s.events
                if e.name == "checkflow.tool.approval"]
    assert outcomes == ["requested", "denied"]
