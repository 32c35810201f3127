"""Fixtures for the telemetry tests: SDK providers with in-memory exporters, per test."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from checkflow.telemetry import OpenTelemetryInterceptor


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracer_provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def interceptor(tracer_provider: TracerProvider, reader: InMemoryMetricReader
                ) -> OpenTelemetryInterceptor:
    return OpenTelemetryInterceptor(tracer_provider=tracer_provider,
                                    meter_provider=MeterProvider(metric_readers=[reader]))
