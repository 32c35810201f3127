"""``python -m checkflow serve`` as a real process, its stdout and stderr read apart, and a
small OTLP/HTTP receiver on loopback that keeps what it is sent."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

REPO = Path(__file__).resolve().parents[2]
TARGET = "tests.telemetry.telemetry_flows:workflow"


class ServeProcess:
    """One ``serve`` process on port 0; ``url`` once its banner is out; ``stderr`` lines."""

    def __init__(self, *args: str, env: Mapping[str, str] | None = None,
                 storage: str = "memory:") -> None:
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith(("CHECKFLOW_LOG", "CHECKFLOW_ACCESS", "OTEL_"))}
        environ.update({"PYTHONPATH": str(REPO), **(env or {})})
        self.process = subprocess.Popen(
            [sys.executable, "-m", "checkflow", "serve", TARGET, "--port", "0",
             "--storage", storage, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ, cwd=REPO)
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._changed = threading.Condition()
        for stream, lines in ((self.process.stdout, self.stdout),
                              (self.process.stderr, self.stderr)):
            threading.Thread(target=self._drain, args=(stream, lines), daemon=True).start()
        if not self.wait_for(lambda: any(" on http://" in line for line in self.stdout), 120):
            self.stop()
            raise RuntimeError(f"serve did not start: {''.join(self.stdout + self.stderr)}")
        banner = next(line for line in self.stdout if " on http://" in line)
        self.url = banner.split(" on ", 1)[1].split()[0]

    def _drain(self, stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            with self._changed:
                lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, ready: object, timeout: float = 30.0) -> bool:
        """Until ``ready()`` holds (re-checked on each new line) or ``timeout`` passes."""
        with self._changed:
            return self._changed.wait_for(
                lambda: ready() or self.process.poll() is not None, timeout  # type: ignore
            ) and bool(ready())  # type: ignore[operator]

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@contextlib.contextmanager
def serving(*args: str, **options: object) -> Iterator[ServeProcess]:
    server = ServeProcess(*args, **options)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


class Receiver:
    """An OTLP/HTTP collector stand-in: ``POST /v1/traces`` (protobuf) is decoded and kept;
    ``/v1/metrics`` and ``/v1/logs`` are accepted and counted."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.resources: list[dict[str, str]] = []
        self.metric_posts = 0
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with receiver.changed:
                    if self.path == "/v1/traces":
                        request = ExportTraceServiceRequest.FromString(body)
                        for resource_spans in request.resource_spans:
                            receiver.resources.append({
                                a.key: a.value.string_value
                                for a in resource_spans.resource.attributes})
                            for scope in resource_spans.scope_spans:
                                receiver.spans.extend(scope.spans)
                    else:
                        receiver.metric_posts += 1
                    receiver.changed.notify_all()
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def wait_for(self, ready: object, timeout: float = 30.0) -> bool:
        with self.changed:
            return self.changed.wait_for(ready, timeout)  # type: ignore[arg-type]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)
