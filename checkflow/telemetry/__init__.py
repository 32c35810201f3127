"""Telemetry: OpenTelemetry traces and metrics of runs and hosted requests, ids in logs.

``OpenTelemetryInterceptor`` (pass it in ``interceptors=[...]`` of ``Workflow.run`` or
``WorkflowHost``) traces and measures runs; ``TracingMiddleware`` / ``instrument_app`` give
every hosted request a span parented by the client's ``traceparent``; ``TraceContextFilter``
puts trace and span ids on log records; ``configure_from_environment`` is what
``serve --otel`` runs. Needs the ``otel`` extra; the engine never imports this package.
Names are listed in ``docs/telemetry.md``.
"""

from __future__ import annotations

from checkflow._extras import requires_extra

with requires_extra("otel", "checkflow.telemetry"):
    from checkflow.telemetry._interceptor import OpenTelemetryInterceptor
    from checkflow.telemetry._logs import TraceContextFilter
    from checkflow.telemetry._request import TracingMiddleware, instrument_app
    from checkflow.telemetry._sdk import configure_from_environment
    from checkflow.telemetry._tools import OpenTelemetryToolTracer

__all__ = [
    "OpenTelemetryInterceptor",
    "OpenTelemetryToolTracer",
    "TraceContextFilter",
    "TracingMiddleware",
    "configure_from_environment",
    "instrument_app",
]
