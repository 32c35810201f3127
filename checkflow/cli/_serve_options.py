"""``serve``'s settings: flags, the environment variables a container sets, and their defaults.

A flag wins over its variable, a variable over the default; ``ENVIRONMENT`` is the one table
the README documents. Connection bounds (header and idle timeouts, a concurrency limit, the
largest request head) have defaults safe on an open port. This module must never import the
web server: parsing a command line must stay cheap.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from checkflow.cli._logging import LogSettings, add_log_arguments, log_settings

__all__ = ["DEFAULT_CONCURRENCY", "ENVIRONMENT", "LOOPS", "ServeOptions", "add_serve_options",
           "serve_options"]

DEFAULT_CONCURRENCY = 1000
LOOPS = ("auto", "asyncio", "uvloop")
"""``--loop`` choices: ``auto`` takes uvloop when it is importable, else asyncio's own loop."""

ENVIRONMENT = {
    "CHECKFLOW_STORAGE": "--storage (every command)",
    "CHECKFLOW_HOST": "--host",
    "CHECKFLOW_PORT": "--port ($PORT too with --foundry)",
    "CHECKFLOW_ADAPTERS": "--adapters",
    "CHECKFLOW_AUTHENTICATE": "--authenticate",
    "CHECKFLOW_LOOP": "--loop",
}
"""The variables ``serve`` reads, and the flag each stands for."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """Everything ``serve`` needs besides the target, resolved."""

    host: str
    port: int
    storage: str
    adapters: tuple[str, ...]
    authenticate: str | None
    foundry: bool
    lease_seconds: float
    shutdown_timeout: float
    header_timeout: float
    keep_alive_timeout: float
    limit_concurrency: int | None  # None: DEFAULT_CONCURRENCY, or less to fit the fd limit
    max_header_bytes: int
    on_disconnect: str = "cancel"
    max_body_bytes: int = 1_048_576
    body_timeout: float = 30.0
    min_body_rate: int = 65_536
    max_json_depth: int = 64
    max_record_bytes: int = 8 * 1024 * 1024
    public_url: str | None = None
    logs: LogSettings = field(default_factory=LogSettings)
    otel: bool = False
    loop: str = "auto"
    inspector: bool = False


def _positive(kind: type[float] | type[int]) -> Callable[[str], float | int]:
    def parse(text: str) -> float | int:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its error message
    return parse


def add_serve_options(serve: argparse.ArgumentParser) -> None:
    """The lease, shutdown, connection-bound, telemetry and logging flags (the rest are
    declared with the command)."""
    seconds, count = _positive(float), _positive(int)
    serve.add_argument("--public-url", metavar="URL",
                       help="the base URL clients reach this server at (the A2A agent card's "
                            "interface URLs; default: taken from each request's Host)")
    serve.add_argument("--inspector", action="store_true",
                       help="serve the inspector at /inspector (every conversation, its "
                            "snapshot tree, state and diffs, answering and branching in a "
                            "browser) and the API reference at /docs")
    serve.add_argument("--otel", action="store_true",
                       help="trace and measure with OpenTelemetry, exporting over OTLP/HTTP "
                            "as the OTEL_* environment variables say (extra: otel)")
    add_log_arguments(serve)
    serve.add_argument("--loop", choices=LOOPS, default=None,
                       help="the event loop: uvloop (extra: hosting), asyncio's own, "
                            "or auto, uvloop when installed (default auto)")
    serve.add_argument("--lease-seconds", type=seconds, default=300.0, metavar="S",
                       help="how long a conversation stays locked to a server that died "
                            "mid-run (default 300; a restart on the same machine takes its "
                            "own dead server's leases over at once)")
    serve.add_argument("--shutdown-timeout", type=seconds, default=30.0, metavar="S",
                       help="on SIGTERM, how long running turns may finish before they are "
                            "cancelled at their next safe point (default 30)")
    serve.add_argument("--header-timeout", type=seconds, default=10.0, metavar="S",
                       help="close a connection that has not sent a whole request head "
                            "within S seconds (default 10)")
    serve.add_argument("--keep-alive-timeout", type=seconds, default=5.0, metavar="S",
                       help="close an idle keep-alive connection after S seconds (default 5)")
    serve.add_argument("--limit-concurrency", type=count, default=None, metavar="N",
                       help="answer 503 beyond N open connections or running requests "
                            f"(default {DEFAULT_CONCURRENCY}, or what the file-descriptor "
                            "limit allows if less)")
    serve.add_argument("--on-disconnect", choices=["cancel", "continue"], default="cancel",
                       help="when a streaming client goes away: cancel the run at its next "
                            "safe point (default), or let it finish and commit (re-attach "
                            "with GET /v1/conversations/ID/events)")
    serve.add_argument("--max-header-bytes", type=count, default=16_384, metavar="BYTES",
                       help="refuse a request whose head is larger (default 16384)")
    serve.add_argument("--max-body-bytes", type=count, default=1_048_576, metavar="BYTES",
                       help="refuse (413) a request body larger than this, on every route "
                            "(default 1048576)")
    serve.add_argument("--body-timeout", type=seconds, default=30.0, metavar="S",
                       help="answer 408 and close when a request body has not arrived within "
                            "S seconds, plus a second per --min-body-rate bytes received "
                            "(default 30)")
    serve.add_argument("--min-body-rate", type=count, default=65_536, metavar="BYTES",
                       help="the slowest rate, in bytes a second, a large body may arrive at "
                            "beyond --body-timeout (default 65536)")
    serve.add_argument("--max-json-depth", type=count, default=64, metavar="N",
                       help="refuse a JSON body nesting objects and arrays deeper than N "
                            "levels, on every route (default 64)")
    serve.add_argument("--max-record-bytes", type=count, default=8 * 1024 * 1024,
                       metavar="BYTES",
                       help="the largest record an adapter keeps per thread, task or "
                            "response (409 record_too_large past it; default 8388608)")


def _from(args: argparse.Namespace, name: str, env: Mapping[str, str], variable: str,
          default: str | None) -> str | None:
    value = getattr(args, name)
    if value is not None:
        return str(value)
    return env.get(variable) or default


def serve_options(args: argparse.Namespace, env: Mapping[str, str] | None = None
                  ) -> ServeOptions:
    """``args`` with the environment's values for flags not given; ``ValueError`` if bad."""
    env = os.environ if env is None else env
    foundry = bool(args.foundry)
    host = _from(args, "host", env, "CHECKFLOW_HOST", "0.0.0.0" if foundry else "127.0.0.1")
    port_default = env.get("PORT", "8088") if foundry else "8000"
    port_text = _from(args, "port", env, "CHECKFLOW_PORT", port_default)
    try:
        port = int(str(port_text))
    except ValueError:
        raise ValueError(f"CHECKFLOW_PORT: expected a port number, got {port_text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is out of range (0-65535)")
    adapters = _from(args, "adapters", env, "CHECKFLOW_ADAPTERS", "native") or "native"
    loop = _from(args, "loop", env, "CHECKFLOW_LOOP", "auto") or "auto"
    if loop not in LOOPS:
        raise ValueError(f"CHECKFLOW_LOOP: expected one of {', '.join(LOOPS)}, got {loop!r}")
    return ServeOptions(
        host=str(host), port=port,
        storage=str(args.storage),
        adapters=tuple(a.strip() for a in adapters.split(",") if a.strip()),
        authenticate=_from(args, "authenticate", env, "CHECKFLOW_AUTHENTICATE", None),
        foundry=foundry, lease_seconds=args.lease_seconds,
        shutdown_timeout=args.shutdown_timeout, header_timeout=args.header_timeout,
        keep_alive_timeout=args.keep_alive_timeout, limit_concurrency=args.limit_concurrency,
        max_header_bytes=args.max_header_bytes, on_disconnect=args.on_disconnect,
        max_body_bytes=args.max_body_bytes, body_timeout=args.body_timeout,
        min_body_rate=args.min_body_rate, max_json_depth=args.max_json_depth,
        max_record_bytes=args.max_record_bytes,
        public_url=getattr(args, "public_url", None), logs=log_settings(args, env),
        otel=bool(getattr(args, "otel", False)), loop=loop,
        inspector=bool(getattr(args, "inspector", False)))
