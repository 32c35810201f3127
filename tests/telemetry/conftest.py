"""Fixtures for the telemetry tests: SDK providers with in-memory exporters.

The tracer provider is installed globally once (user code in the flows, like an
instrumented HTTP client, uses the global tracer); each test starts with an empty exporter.
The meter provider is per test.
"""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from checkflow.telemetry import OpenTelemetryInterceptor

_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))
trace.set_tracer_provider(_PROVIDER)
if trace.get_tracer_provider() is not _PROVIDER:  # another test module set one first
    trace._TRACER_PROVIDER = _PROVIDER  # type: ignore[attr-defined]  # tests only


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    _EXPORTER.clear()
    return _EXPORTER


@pytest.fixture
def tracer_provider(exporter: InMemorySpanExporter) -> TracerProvider:
    return _PROVIDER


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def interceptor(tracer_provider: TracerProvider, reader: InMemoryMetricReader
                ) -> OpenTelemetryInterceptor:
    return OpenTelemetryInterceptor(tracer_provider=tracer_provider,
                                    meter_provider=MeterProvider(metric_readers=[reader]))
