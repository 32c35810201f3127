"""One SERVER span per hosted request, parented by the client's ``traceparent``, over a real
uvicorn server on loopback: the native API (a pause, then the resume in a second request),
AG-UI and Foundry. The run's spans are the request's children."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Sequence

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from spans import is_child, named, one, under
from starlette.middleware import Middleware
from starlette.requests import Request
from telemetry_flows import approval

from checkflow.adapters.agui import AGUIAdapter
from checkflow.adapters.foundry import FoundryAdapter
from checkflow.hosting import WorkflowHost, create_app
from checkflow.telemetry import OpenTelemetryInterceptor, TracingMiddleware, instrument_app
from tests.hosting.served import served


class Client:
    """A caller with a trace of its own: each request carries a fresh ``traceparent``."""

    def __init__(self) -> None:
        self.trace_id = secrets.randbits(128) or 1
        self.sent: list[int] = []

    def headers(self) -> dict[str, str]:
        span_id = secrets.randbits(64) or 1
        self.sent.append(span_id)
        return {"traceparent": f"00-{self.trace_id:032x}-{span_id:016x}-01",
                "tracestate": "client=yes", "authorization": "Bearer s3cret"}


def authenticate(request: Request) -> str | None:
    return "alice" if request.headers.get("authorization") == "Bearer s3cret" else None


async def finished(exporter: InMemorySpanExporter, count: int) -> Sequence[ReadableSpan]:
    """The spans once ``count`` SERVER spans ended (a request span ends after the response
    is sent, so it may end just after the client has read it)."""
    for _ in range(1000):  # bounded: 10 s
        spans = exporter.get_finished_spans()
        if len([s for s in spans if s.kind is SpanKind.SERVER]) >= count:
            return spans
        await asyncio.sleep(0.01)
    raise AssertionError(f"fewer than {count} request spans ended")


@pytest.fixture
async def url(interceptor: OpenTelemetryInterceptor) -> AsyncIterator[str]:
    host = WorkflowHost(approval(), interceptors=[interceptor])
    app = create_app(host, adapters=[AGUIAdapter(), FoundryAdapter()],
                     authenticate=authenticate, middleware=[Middleware(TracingMiddleware)])
    async with served(app) as (base, _server):
        yield base


def request_span(spans: Sequence[ReadableSpan], client: Client, index: int) -> ReadableSpan:
    """The server span the client's ``index``-th request opened, checked against its
    ``traceparent``: same trace, the client's span as parent, its tracestate kept."""
    (span,) = [s for s in spans if s.kind is SpanKind.SERVER and s.parent is not None
               and s.parent.span_id == client.sent[index]]
    assert span.context.trace_id == client.trace_id and span.parent is not None
    assert span.parent.is_remote and span.context.trace_state.get("client") == "yes"
    assert span.attributes["checkflow.principal.present"] is True
    assert all("s3cret" not in str(v) for v in span.attributes.values())
    return span


def run_under(spans: Sequence[ReadableSpan], request: ReadableSpan) -> ReadableSpan:
    (run,) = [s for s in named(spans, "workflow.run") if is_child(s, request)]
    assert {s.name for s in under(spans, run)} >= {
        "workflow.superstep", "executor.process", "checkpoint.commit"}
    return run


async def test_native_pause_then_resume_in_a_second_request(
    url: str, exporter: InMemorySpanExporter
) -> None:
    client = Client()
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        first = await http.post("/v1/conversations/c%2F1/runs", json={"message": "tea"},
                                headers=client.headers())
        assert first.status_code == 200, first.text
        pending = first.json()["pending_requests"]
        answers = {request["request_id"]: True for request in pending}
        second = await http.post("/v1/conversations/c%2F1/runs", json={"responses": answers},
                                 headers=client.headers())
        assert second.status_code == 200 and second.json()["outputs"] == ["approved"]
    spans = await finished(exporter, 2)
    paused, resumed = request_span(spans, client, 0), request_span(spans, client, 1)
    for span in (paused, resumed):
        assert span.name == "POST /v1/conversations/{conversation_id}/runs"
        assert span.attributes["checkflow.adapter"] == "native"
        assert span.attributes["gen_ai.conversation.id"] == "c/1"
        assert span.attributes["http.response.status_code"] == 200
    run_one, run_two = run_under(spans, paused), run_under(spans, resumed)
    assert run_one.attributes["run.status"] == "awaiting_responses"
    assert run_two.attributes["run.status"] == "idle"
    assert run_two.attributes["gen_ai.conversation.id"] == "c/1"
    assert run_two.attributes["checkpoint.id"] == run_one.attributes["checkpoint.id"]
    assert run_two.attributes["snapshot.start_head_id"] == run_one.attributes["snapshot.head_id"]
    assert [link.context.span_id for link in run_two.links] == [run_one.context.span_id]


async def test_refused_and_failing_requests_are_spans_too(
    url: str, exporter: InMemorySpanExporter
) -> None:
    client = Client()
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        missing = await http.get("/v1/conversations/nope", headers=client.headers())
        assert missing.status_code == 404
        failed = await http.post("/v1/conversations/f/runs", json={"message": "boom"},
                                 headers=client.headers())
        assert failed.status_code == 200 and failed.json()["status"] == "failed"
        unauthenticated = await http.get("/v1/conversations/nope",
                                         headers={"traceparent": client.headers()["traceparent"]})
        assert unauthenticated.status_code == 401
        assert (await http.get("/healthz")).status_code == 200
    spans = await finished(exporter, 3)
    lookup = request_span(spans, client, 0)
    assert lookup.name == "GET /v1/conversations/{conversation_id}"
    assert lookup.attributes["http.response.status_code"] == 404
    assert lookup.status.status_code is StatusCode.UNSET  # a 4xx is the client's
    run = run_under(spans, request_span(spans, client, 1))
    assert run.status.status_code is StatusCode.ERROR
    (refused,) = [s for s in spans if s.parent is not None
                  and s.parent.span_id == client.sent[2]]
    assert refused.attributes["checkflow.principal.present"] is False
    assert refused.attributes["http.response.status_code"] == 401
    assert not [s for s in spans if s.attributes.get("url.path") == "/healthz"]


async def test_agui_requests_parent_their_runs(url: str, exporter: InMemorySpanExporter) -> None:
    client = Client()
    body = {"threadId": "t-1", "runId": "r-1", "protocolVersion": "1.0",
            "messages": [{"id": "u-1", "role": "user", "content": "tea"}]}
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        response = await http.post("/agui", json=body, headers=client.headers())
        assert response.status_code == 200 and "RUN_FINISHED" in response.text
    spans = await finished(exporter, 1)
    span = request_span(spans, client, 0)
    assert span.name == "POST /agui" and span.attributes["checkflow.adapter"] == "agui"
    assert span.attributes["gen_ai.conversation.id"] == "t-1"  # from the run, not the body
    assert run_under(spans, span).attributes["run.status"] == "awaiting_responses"


async def test_foundry_requests_parent_their_runs(
    url: str, exporter: InMemorySpanExporter
) -> None:
    client = Client()
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        response = await http.post("/responses", json={"input": "tea", "conversation": "f-1"},
                                   headers=client.headers())
        assert response.status_code == 200, response.text
    spans = await finished(exporter, 1)
    span = request_span(spans, client, 0)
    assert span.name == "POST /responses" and span.attributes["checkflow.adapter"] == "foundry"
    run = run_under(spans, span)
    assert span.attributes["gen_ai.conversation.id"] == run.attributes[
        "gen_ai.conversation.id"] == "f-1"


async def test_instrument_app_adds_the_middleware_to_a_built_app(
    interceptor: OpenTelemetryInterceptor, exporter: InMemorySpanExporter
) -> None:
    app = instrument_app(create_app(WorkflowHost(approval(), interceptors=[interceptor])))
    client = Client()
    async with served(app) as (base, _server), httpx.AsyncClient(base_url=base) as http:
        response = await http.post("/v1/conversations/x/runs", json={"message": "tea"},
                                   headers=client.headers())
        assert response.status_code == 200
    spans = await finished(exporter, 1)
    span = one(spans, "POST /v1/conversations/{conversation_id}/runs")
    assert span.parent is not None and span.parent.span_id == client.sent[0]
    assert span.attributes["checkflow.principal.present"] is False
    run_under(spans, span)




async def test_a_streamed_run_is_inside_its_request_span(
    url: str, exporter: InMemorySpanExporter
) -> None:
    client = Client()
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        response = await http.post("/v1/conversations/s-1/runs?stream=true",
                                   json={"message": "tea"}, headers=client.headers())
        assert response.status_code == 200 and "event: result" in response.text
    spans = await finished(exporter, 1)
    span = request_span(spans, client, 0)
    assert span.attributes["gen_ai.conversation.id"] == "s-1"
    assert run_under(spans, span).attributes["run.status"] == "awaiting_responses"
