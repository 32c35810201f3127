"""``TraceContextFilter``: stamps log records with the current trace and span ids.

Install it on a handler (``serve --otel`` does): every record then has ``trace_id`` and
``span_id`` (32 and 16 lowercase hex digits, or ``""`` outside a recording span), which the
CLI's text and JSON formats print. This module must never emit records itself.
"""

from __future__ import annotations

import logging

from opentelemetry import trace

__all__ = ["TraceContextFilter"]


class TraceContextFilter(logging.Filter):
    """Adds ``record.trace_id`` / ``record.span_id`` from the active span; never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            record.trace_id = format(context.trace_id, "032x")
            record.span_id = format(context.span_id, "016x")
        else:
            record.trace_id = record.span_id = ""
        return True
