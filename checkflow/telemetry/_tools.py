"""Tool calls as OpenTelemetry spans, approvals as span events (installed on import).

A call is an ``execute_tool <name>`` span with the GenAI attributes (``gen_ai.operation.name``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``), from the global tracer
provider; an approval asked or answered is a ``checkflow.tool.approval`` event on the current
span (the executor's, under ``OpenTelemetryInterceptor``). This module must never configure a
provider: the application does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from checkflow.agents import set_tool_tracer

__all__ = ["OpenTelemetryToolTracer"]


class _Span:
    def __init__(self, span: Span) -> None:
        self._span = span

    def fail(self, error: BaseException) -> None:
        self._span.record_exception(error)
        self._span.set_attribute("error.type", type(error).__qualname__)
        self._span.set_status(Status(StatusCode.ERROR, str(error)))


class OpenTelemetryToolTracer:
    """``execute_tool`` spans and approval events with the global tracer provider."""

    @contextlib.contextmanager
    def span(self, tool_name: str, call_id: str) -> Iterator[_Span]:
        tracer = trace.get_tracer("checkflow")
        with tracer.start_as_current_span(
            f"execute_tool {tool_name}", kind=SpanKind.INTERNAL,
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool_name,
                        "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": "function"},
            record_exception=False, set_status_on_exception=False,
        ) as span:
            yield _Span(span)

    def approval(self, tool_name: str, call_id: str, outcome: str) -> None:
        trace.get_current_span().add_event("checkflow.tool.approval", {
            "gen_ai.tool.name": tool_name, "gen_ai.tool.call.id": call_id,
            "checkflow.tool.approval": outcome})


set_tool_tracer(OpenTelemetryToolTracer())
