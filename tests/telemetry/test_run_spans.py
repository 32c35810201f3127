"""The interceptor's spans for runs made in-process: names, attributes and parentage for a
run that pauses and one resumed from its checkpoint, a failure, a nested workflow and an
``AgentExecutor``; the executor's own span nests inside ``executor.process``."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from spans import is_child, named, one, under
from telemetry_flows import agent, approval, nested

from checkflow.errors import WorkflowRunError
from checkflow.storage import FileCheckpointStorage
from checkflow.telemetry import OpenTelemetryInterceptor
from checkflow.workflows import RunStatus, encoded_size


async def test_a_paused_run_and_its_resume_are_traced_and_linked(
    interceptor: OpenTelemetryInterceptor, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    workflow = approval()
    storage = FileCheckpointStorage(tmp_path)
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    first = await workflow.run("tea", checkpoint=checkpoint, interceptors=[interceptor])
    assert first.status is RunStatus.AWAITING_RESPONSES
    paused_head = checkpoint.head_snapshot_id
    (request_id,) = first.pending_requests
    spans = exporter.get_finished_spans()
    run = one(spans, "workflow.run")
    assert run.parent is None and run.status.status_code is StatusCode.UNSET
    attributes = dict(run.attributes or {})
    assert attributes["workflow.name"] == "approval"
    assert attributes["checkpoint.id"] == checkpoint.checkpoint_id
    assert attributes["snapshot.start_head_id"] == ""
    assert attributes["snapshot.head_id"] == paused_head
    assert attributes["run.status"] == "awaiting_responses"
    assert attributes["run.supersteps"] == 1
    assert attributes["run.pending_requests"] == 1
    assert attributes["checkpoint.storage"] == "FileCheckpointStorage"
    step = one(spans, "workflow.superstep")
    assert is_child(step, run) and step.attributes["superstep"] == 1
    ask = one(spans, "executor.process")
    assert is_child(ask, step)
    assert (ask.attributes["executor.id"], ask.attributes["executor.type"],
            ask.attributes["message.type"]) == ("ask", "Ask", "str")
    assert is_child(one(spans, "user.call"), ask)  # user code runs inside executor.process
    commits = named(spans, "checkpoint.commit")
    assert [c.attributes["snapshot.boundary"] for c in commits] == [
        "input_accepted", "superstep_completed"]
    assert is_child(commits[0], run) and is_child(commits[1], step)
    snapshot = checkpoint.get_snapshot(paused_head)
    assert commits[1].attributes["snapshot.id"] == paused_head
    assert commits[1].attributes["snapshot.parent_id"] == snapshot.parent_snapshot_id
    assert commits[1].attributes["snapshot.encoded_bytes"] == encoded_size(snapshot) > 0
    assert commits[1].attributes["checkpoint.storage"] == "FileCheckpointStorage"

    exporter.clear()
    reloaded = await storage.load(checkpoint.checkpoint_id)
    second = await workflow.run(None, checkpoint=reloaded, responses={request_id: True},
                                interceptors=[interceptor])
    assert second.get_outputs() == ["approved"]
    spans = exporter.get_finished_spans()
    resumed = one(spans, "workflow.run")
    assert resumed.attributes["run.kind"] == "responses"
    assert resumed.attributes["snapshot.start_head_id"] == paused_head  # ties it to run one
    assert resumed.attributes["snapshot.head_id"] == reloaded.head_snapshot_id
    assert resumed.attributes["run.status"] == "idle"
    assert resumed.context.trace_id != run.context.trace_id
    assert [link.context.span_id for link in resumed.links] == [run.context.span_id]
    assert resumed.links[0].attributes == {"checkpoint.id": checkpoint.checkpoint_id}
    assert [s.attributes["superstep"] for s in named(spans, "workflow.superstep")] == [2, 3]
    assert len(under(spans, resumed)) == len(spans) - 1  # everything is inside the run


async def test_a_failing_executor_marks_its_span_the_superstep_and_the_run_as_errors(
    interceptor: OpenTelemetryInterceptor, exporter: InMemorySpanExporter
) -> None:
    with pytest.raises(WorkflowRunError):
        await approval().run("boom", interceptors=[interceptor])
    spans = exporter.get_finished_spans()
    for name, error in [("executor.process", "RuntimeError"),
                        ("workflow.superstep", "RuntimeError"),
                        ("workflow.run", "WorkflowRunError")]:
        span = one(spans, name)
        assert span.status.status_code is StatusCode.ERROR, name
        assert span.attributes["error.type"] == error
        assert [e.name for e in span.events] == ["exception"]
    failed = one(spans, "executor.process")
    assert failed.events[0].attributes["exception.message"] == "the ask executor exploded"
    assert one(spans, "workflow.run").attributes["run.status"] == "failed"


async def test_a_nested_workflow_runs_inside_its_executor_span(
    interceptor: OpenTelemetryInterceptor, exporter: InMemorySpanExporter
) -> None:
    result = await nested().run("hi", interceptors=[interceptor])
    assert result.get_outputs() == ["HI"]
    spans = exporter.get_finished_spans()
    outer = one(spans, "workflow.run", **{"workflow.name": "outer"})
    inner = one(spans, "workflow.run", **{"workflow.name": "inner"})
    child = one(spans, "executor.process", **{"executor.id": "child"})
    assert child.attributes["executor.type"] == "WorkflowExecutor"
    assert is_child(inner, child) and child in under(spans, outer)
    upper = one(spans, "executor.process", **{"executor.id": "upper"})
    assert is_child(upper, one(spans, "workflow.superstep", **{"workflow.name": "inner"}))
    inner_commits = [c for c in named(spans, "checkpoint.commit")
                     if c.attributes["workflow.name"] == "inner"]
    assert inner_commits and all(
        c.attributes["checkpoint.storage"] == "unattached" for c in inner_commits)
    assert all(c in under(spans, inner) for c in inner_commits)


async def test_an_agent_executor_span_carries_the_genai_agent_attributes(
    interceptor: OpenTelemetryInterceptor, exporter: InMemorySpanExporter
) -> None:
    await agent().run("write", interceptors=[interceptor])
    span = one(exporter.get_finished_spans(), "executor.process")
    assert span.attributes["executor.type"] == "AgentExecutor"
    assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert span.attributes["gen_ai.agent.id"] == "writer"
    plain = approval()
    exporter.clear()
    await plain.run("tea", interceptors=[interceptor])
    assert "gen_ai.operation.name" not in one(
        exporter.get_finished_spans(), "executor.process").attributes
