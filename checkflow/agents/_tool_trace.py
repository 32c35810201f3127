"""Where tool calls are traced: a hook ``checkflow.telemetry`` fills, a no-op until it does.

A call runs inside ``tool_span(name, call_id)``; an approval asked or answered is reported by
``approval_event``. Importing ``checkflow.telemetry`` (as ``OpenTelemetryInterceptor`` and
``serve --otel`` do) installs a ``ToolTracer`` that makes them ``execute_tool`` spans and span
events. This module must never import OpenTelemetry: only ``checkflow.telemetry`` does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

__all__ = ["ToolTracer", "approval_event", "set_tool_tracer", "tool_span"]


class ToolSpan(Protocol):
    def fail(self, error: BaseException) -> None:
        """Mark the call failed (the model is told; the span says why)."""


class ToolTracer(Protocol):
    """What traces tool calls (``checkflow.telemetry`` provides the OpenTelemetry one)."""

    def span(self, tool_name: str, call_id: str) -> contextlib.AbstractContextManager[ToolSpan]:
        """The span of one call, current while it runs."""
        ...

    def approval(self, tool_name: str, call_id: str, outcome: str) -> None:
        """An approval requested, approved or denied, on the current span."""
        ...


class _NoSpan:
    def fail(self, error: BaseException) -> None:
        return None


_tracer: ToolTracer | None = None


def set_tool_tracer(tracer: ToolTracer | None) -> None:
    """Install ``tracer`` for every tool call of the process (``None``: trace nothing)."""
    global _tracer
    _tracer = tracer


@contextlib.contextmanager
def tool_span(tool_name: str, call_id: str) -> Iterator[ToolSpan]:
    """The span of one tool call (a no-op without a tracer)."""
    tracer = _tracer
    if tracer is None:
        yield _NoSpan()
        return
    with tracer.span(tool_name, call_id) as span:
        yield span


def approval_event(tool_name: str, call_id: str, outcome: str) -> None:
    """Report an approval requested, approved or denied (a no-op without a tracer)."""
    if _tracer is not None:
        _tracer.approval(tool_name, call_id, outcome)
