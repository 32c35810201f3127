"""The run metrics after a known set of runs, read with the SDK's in-memory metric reader."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from spans import named
from telemetry_flows import approval

from checkflow.errors import WorkflowRunError
from checkflow.storage import InMemoryCheckpointStorage
from checkflow.telemetry import OpenTelemetryInterceptor


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    return {metric.name: list(metric.data.data_points)
            for resource in data.resource_metrics for scope in resource.scope_metrics
            for metric in scope.metrics}


async def test_counters_and_histograms_after_a_pause_a_resume_and_a_failure(
    interceptor: OpenTelemetryInterceptor, reader: InMemoryMetricReader,
    exporter: InMemorySpanExporter,
) -> None:
    workflow, storage = approval(), InMemoryCheckpointStorage()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    paused = await workflow.run("tea", checkpoint=checkpoint, interceptors=[interceptor])
    await workflow.run(None, checkpoint=checkpoint, responses=dict.fromkeys(
        paused.pending_requests, True), interceptors=[interceptor])
    with pytest.raises(WorkflowRunError):
        await workflow.run("boom", interceptors=[interceptor])  # unattached checkpoint
    spans = exporter.get_finished_spans()
    found = points(reader)

    runs = {(p.attributes["run.status"], p.attributes["checkpoint.storage"]): p.value
            for p in found["checkflow.workflow.runs"]}
    assert runs == {("awaiting_responses", "InMemoryCheckpointStorage"): 1,
                    ("idle", "InMemoryCheckpointStorage"): 1, ("failed", "unattached"): 1}
    commits = {p.attributes["checkpoint.storage"]: p.value
               for p in found["checkflow.checkpoint.commits"]}
    commit_spans = named(spans, "checkpoint.commit")
    # a one-shot run commits only when it ends or pauses: the failed one committed nothing
    assert commits == {"InMemoryCheckpointStorage": 5}
    assert sum(commits.values()) == len(commit_spans)
    durations = found["checkflow.checkpoint.commit.duration"]
    assert sum(p.count for p in durations) == len(commit_spans)
    sizes = {p.attributes["checkpoint.storage"]: p
             for p in found["checkflow.checkpoint.commit.size"]}
    memory = [c for c in commit_spans
              if c.attributes["checkpoint.storage"] == "InMemoryCheckpointStorage"]
    assert sizes["InMemoryCheckpointStorage"].sum == sum(
        c.attributes["snapshot.encoded_bytes"] for c in memory)
    steps = found["checkflow.workflow.superstep.duration"]
    assert sum(p.count for p in steps) == len(named(spans, "workflow.superstep")) == 4
    assert all(p.sum > 0 for p in steps)
    for name, series in found.items():  # bounded attributes only: never an id
        for point in series:
            allowed = {"workflow.name", "checkpoint.storage"} | (
                {"run.status"} if name == "checkflow.workflow.runs" else set())
            assert set(point.attributes) == allowed, (name, point.attributes)
            assert point.attributes["workflow.name"] == "approval"


async def test_without_a_recording_span_no_spans_are_made_and_metrics_still_count(
    reader: InMemoryMetricReader,
) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    dropped = InMemorySpanExporter()
    sampled_out = TracerProvider(sampler=ALWAYS_OFF)
    sampled_out.add_span_processor(SimpleSpanProcessor(dropped))
    interceptor = OpenTelemetryInterceptor(sampled_out, MeterProvider(metric_readers=[reader]))
    workflow = approval()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=InMemoryCheckpointStorage())
    paused = await workflow.run("tea", checkpoint=checkpoint, interceptors=[interceptor])
    await workflow.run(None, checkpoint=checkpoint, responses=dict.fromkeys(
        paused.pending_requests, True), interceptors=[interceptor])
    assert dropped.get_finished_spans() == ()
    found = points(reader)
    assert sorted(p.attributes["run.status"] for p in found["checkflow.workflow.runs"]) == [
        "awaiting_responses", "idle"]
    assert sum(p.value for p in found["checkflow.checkpoint.commits"]) == 5
    assert sum(p.count for p in found["checkflow.workflow.superstep.duration"]) == 3
