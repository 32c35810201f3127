"""A2A requests get their span too: the official a2a-sdk client over real HTTP on loopback,
with a ``traceparent``, parents the request span, and the run is its child."""

from __future__ import annotations

import importlib
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

pytest.importorskip("a2a")
pytest.importorskip("checkflow.adapters.a2a")

from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from spans import named, under
from starlette.middleware import Middleware
from telemetry_flows import approval
from test_request_spans import Client, authenticate, finished, request_span

from checkflow.hosting import WorkflowHost, create_app
from checkflow.telemetry import OpenTelemetryInterceptor, TracingMiddleware
from tests.hosting.served import served

A2AAdapter = importlib.import_module("checkflow.adapters.a2a").A2AAdapter


@pytest.fixture
async def url(interceptor: OpenTelemetryInterceptor) -> AsyncIterator[str]:
    host = WorkflowHost(approval(), interceptors=[interceptor])
    app = create_app(host, adapters=[A2AAdapter()], authenticate=authenticate,
                     middleware=[Middleware(TracingMiddleware)])
    async with served(app) as (base, _server):
        yield base


async def test_an_a2a_send_parents_its_run(url: str, exporter: InMemorySpanExporter) -> None:
    client = Client()
    async with httpx.AsyncClient(base_url=url, timeout=30, headers=client.headers()) as http:
        factory = ClientFactory(ClientConfig(httpx_client=http, streaming=False))
        a2a = await factory.create_from_url(url)
        message = a2a_pb2.Message(message_id=uuid.uuid4().hex, role=a2a_pb2.ROLE_USER,
                                  context_id="ctx-1", parts=[a2a_pb2.Part(text="tea")])
        request = a2a_pb2.SendMessageRequest(message=message)
        (answer,) = [event async for event in a2a.send_message(request)]
        assert answer.task.status.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED
    spans = await finished(exporter, 2)  # the card, then the send
    # the a2a SDK traces itself too (its spans sit between the request's and the run's)
    ours = [s for s in spans if s.kind is SpanKind.SERVER and s.name.split()[0] in ("GET", "POST")]
    assert sorted(s.name for s in ours) == ["GET /.well-known/agent-card.json", "POST /a2a"]
    assert all(s.parent is not None and s.parent.span_id == client.sent[0] for s in ours)
    (send,) = [s for s in ours if s.name == "POST /a2a"]
    assert request_span([send], client, 0) is send
    adapter = A2AAdapter()  # named as create_app names it (its `name`, else its class name)
    assert send.attributes["checkflow.adapter"] == (getattr(adapter, "name", None)
                                                    or type(adapter).__name__)
    (run,) = named(spans, "workflow.run")
    assert run in under(spans, send) and run.context.trace_id == client.trace_id
    assert run.attributes["run.status"] == "awaiting_responses"
    assert {"workflow.superstep", "executor.process", "checkpoint.commit"} <= {
        s.name for s in under(spans, run)}
    assert send.attributes["gen_ai.conversation.id"] == run.attributes["gen_ai.conversation.id"]
