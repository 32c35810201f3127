"""A hosted server: one workflow served over the native API and all three protocol adapters
(A2A, AG-UI and the Responses/Foundry protocol) at once, traced with OpenTelemetry.

Shows: every protocol reaches the same conversations (an A2A ``contextId``, an AG-UI
``threadId``, a native conversation id and a Responses ``conversation`` are one id space,
per principal), so a run started over one protocol can be inspected or answered over
another; the conversations live in files and survive a restart. Telemetry: every request
gets a span (parented by the client's ``traceparent``), and every run, superstep, executor
and commit below it (``OpenTelemetryInterceptor`` + ``TracingMiddleware``, extra ``otel``).
With ``OTEL_EXPORTER_OTLP_ENDPOINT`` set they go there over OTLP/HTTP; without, finished
spans are printed to the console.

Run it: ``python samples/hosted.py [PORT]`` (default 8000; it writes ``./.checkflow``, and a
server started again in the same folder continues the conversations there), then
e.g. the clients on ``docs/adapters/*.md``, or ``curl``::

    curl -s localhost:8000/v1/conversations/c1/runs -H 'content-type: application/json' \\
         -d '{"message": "owls"}'
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import uvicorn
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from starlette.middleware import Middleware

from checkflow import FileCheckpointStorage, FileSessionStore, WorkflowHost, create_app
from checkflow.adapters.a2a import A2AAdapter
from checkflow.adapters.agui import AGUIAdapter
from checkflow.adapters.foundry import FoundryAdapter
from checkflow.telemetry import (
    OpenTelemetryInterceptor,
    TracingMiddleware,
    configure_from_environment,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from samples.approval import workflow  # the repository root is on the path now


def build_app(root: str = "./.checkflow", *, tracer_provider: Any = None,
              meter_provider: Any = None) -> Any:
    """The app: native API (``/v1``), A2A (``/a2a`` and its agent card), AG-UI (``/agui``),
    Responses (``/responses``); the global OpenTelemetry providers unless given others."""
    host = WorkflowHost(
        workflow, session_store=FileSessionStore(f"{root}/sessions"),
        checkpoint_storage=FileCheckpointStorage(f"{root}/checkpoints"),
        interceptors=[OpenTelemetryInterceptor(tracer_provider, meter_provider)])
    return create_app(host, adapters=[A2AAdapter(), AGUIAdapter(), FoundryAdapter()],
                      middleware=[Middleware(TracingMiddleware, tracer_provider=tracer_provider)])


async def main(port: int = 8000) -> None:
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        shutdown = configure_from_environment(service_name="checkflow-sample")
    else:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
        trace.set_tracer_provider(provider)
        shutdown = provider.shutdown
    try:
        await uvicorn.Server(uvicorn.Config(build_app(), host="127.0.0.1", port=port)).serve()
    finally:
        shutdown()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 8000))
