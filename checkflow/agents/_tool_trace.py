"""Tool calls as OpenTelemetry spans, approvals as span events, when the API is installed.

A call is an ``execute_tool <name>`` span with the GenAI attributes (``gen_ai.operation.name``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``); an approval asked or
answered is an event on the current span (the executor's, under ``OpenTelemetryInterceptor``).
Without ``opentelemetry-api`` (the ``otel`` extra) both do nothing. This module must never
configure a provider: the application does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


def _load_trace() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:  # pragma: no cover - the otel extra is not installed
        return None
    return trace


_trace: Any = _load_trace()

__all__ = ["approval_event", "tool_span"]

_TRACER = "checkflow"


class _Span:
    def __init__(self, span: Any) -> None:
        self._span = span

    def fail(self, error: BaseException) -> None:
        """Mark the call failed (the model is told; the span says why)."""
        if self._span is None or _trace is None:
            return
        self._span.record_exception(error)
        self._span.set_attribute("error.type", type(error).__qualname__)
        self._span.set_status(_trace.Status(_trace.StatusCode.ERROR, str(error)))


@contextlib.contextmanager
def tool_span(tool_name: str, call_id: str) -> Iterator[_Span]:
    """The span of one tool call."""
    if _trace is None:
        yield _Span(None)
        return
    tracer = _trace.get_tracer(_TRACER)
    with tracer.start_as_current_span(
        f"execute_tool {tool_name}", kind=_trace.SpanKind.INTERNAL,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool_name,
                    "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": "function"},
        record_exception=False, set_status_on_exception=False,
    ) as span:
        yield _Span(span)


def approval_event(tool_name: str, call_id: str, outcome: str) -> None:
    """``checkflow.tool.approval`` on the current span: requested, approved or denied."""
    if _trace is None:
        return
    _trace.get_current_span().add_event("checkflow.tool.approval", {
        "gen_ai.tool.name": tool_name, "gen_ai.tool.call.id": call_id,
        "checkflow.tool.approval": outcome})
