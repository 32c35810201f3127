"""``configure_from_environment``: the SDK as ``serve --otel`` sets it up, from ``OTEL_*``.

A ``TracerProvider`` with a batching OTLP/HTTP span exporter and a ``MeterProvider`` with a
periodic OTLP/HTTP metric reader, both configured by the standard environment variables
(``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_HEADERS``, ...), installed as the global providers. This module must
never be imported by the engine or the hosts: only by the CLI, or by an app that wants it.
"""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry import metrics, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from checkflow._extras import requires_extra

__all__ = ["configure_from_environment"]


def configure_from_environment(*, service_name: str = "checkflow") -> Callable[[], None]:
    """Install SDK providers exporting over OTLP/HTTP; returns ``shutdown`` (flushes both).

    ``OTEL_SERVICE_NAME`` wins over ``service_name``. Needs the ``otel`` extra (the OTLP
    exporter); a missing package raises ``ImportError`` naming the extra.
    """
    with requires_extra("otel", "configure_from_environment (serve --otel)"):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    resource = Resource.create({"service.name": service_name}).merge(Resource.create())
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    meter_provider = MeterProvider(
        resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)

    def shutdown() -> None:
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return shutdown
