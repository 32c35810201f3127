"""The server's logs: level, format (text or one JSON object per line) and the access log.

``serve --log-level/--log-format/--access-log`` win over ``CHECKFLOW_LOG_LEVEL``,
``CHECKFLOW_LOG_FORMAT`` and ``CHECKFLOW_ACCESS_LOG``; the defaults are ``info``, ``text``
and on. One stderr handler on the root logger takes the ``checkflow`` hierarchy and
uvicorn's loggers alike. Records carry ``workflow_name``, ``conversation_id``,
``checkpoint_id`` and ``snapshot_id`` as ``extra`` fields where the library knows them, and
``trace_id``/``span_id`` when ``--otel`` installs ``checkflow.telemetry.TraceContextFilter``.
This module must never configure anything but logging.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import sys
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["LogSettings", "add_log_arguments", "configure_logging", "log_settings"]

LEVELS = ("critical", "error", "warning", "info", "debug")
FORMATS = ("text", "json")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message", "asctime", "taskName", "color_message"}


@dataclass(frozen=True, slots=True)
class LogSettings:
    """What ``serve`` logs and how."""

    level: str = "info"
    format: str = "text"
    access_log: bool = True


def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    """``--log-level``, ``--log-format``, ``--access-log/--no-access-log`` (default: env)."""
    parser.add_argument("--log-level", choices=LEVELS, default=None,
                        help="default $CHECKFLOW_LOG_LEVEL or info")
    parser.add_argument("--log-format", choices=FORMATS, default=None,
                        help="text, or json: one object per line (default $CHECKFLOW_LOG_FORMAT "
                             "or text)")
    parser.add_argument("--access-log", action=argparse.BooleanOptionalAction, default=None,
                        help="log each request (default $CHECKFLOW_ACCESS_LOG or on)")


def log_settings(args: argparse.Namespace, environ: Mapping[str, str] = os.environ
                 ) -> LogSettings:
    """The flags, else the environment, else the defaults; a bad environment value raises
    ``ValueError`` naming the variable."""
    level = args.log_level or _choice(environ, "CHECKFLOW_LOG_LEVEL", LEVELS, "info")
    fmt = args.log_format or _choice(environ, "CHECKFLOW_LOG_FORMAT", FORMATS, "text")
    access = args.access_log
    if access is None:
        raw = environ.get("CHECKFLOW_ACCESS_LOG", "").strip().lower()
        if raw and raw not in _TRUE + _FALSE:
            raise ValueError(f"CHECKFLOW_ACCESS_LOG must be true or false, not {raw!r}")
        access = raw not in _FALSE
    return LogSettings(level, fmt, bool(access))


def _choice(environ: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str
            ) -> str:
    value = environ.get(name, "").strip().lower() or default
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def configure_logging(settings: LogSettings, *, filters: tuple[logging.Filter, ...] = ()
                      ) -> logging.Handler:
    """One stderr handler on the root logger at ``settings.level``; returns the handler.

    Records no longer collect their caller, thread or process: neither format shows them,
    and finding the caller walks the stack on every record (the logging HOWTO's
    optimizations; measured with ``bench/hosting.py``, about 7 µs per access log line).
    """
    logging._srcfile = None  # documented in the logging HOWTO
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if settings.format == "json" else TextFormatter())
    for item in filters:
        handler.addFilter(item)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    level = logging.getLevelName(settings.level.upper())
    # the chosen level for our own loggers and the server's; libraries (the Cosmos SDK logs
    # every HTTP request at INFO) speak from WARNING up unless asked for DEBUG
    root.setLevel(level if level == logging.DEBUG else max(level, logging.WARNING))
    for name in ("checkflow", "uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    server = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, RepeatLimit) for f in server.filters):
        server.addFilter(RepeatLimit())  # one line a second under overload, not one a request
    return handler


class RepeatLimit(logging.Filter):
    """Lets the same message through at most once per ``seconds`` (a refusal under load)."""

    def __init__(self, seconds: float = 1.0) -> None:
        super().__init__()
        self.seconds = seconds
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        key = str(record.msg)
        last = self._last.get(key)
        if last is not None and record.created - last < self.seconds:
            return False
        if len(self._last) > 256:
            self._last.clear()
        self._last[key] = record.created
        return True


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    """The record's ``extra`` fields (ids, trace context), ``None`` and ``""`` left out."""
    values = record.__dict__
    extra = values.keys() - _STANDARD  # most records (every access log line) have none
    if not extra:
        return {}
    return {k: values[k] for k in values if k in extra and not k.startswith("_")
            and values[k] not in (None, "")}


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message key=value ...`` and the traceback, if any."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self._second, self._stamp = -1, ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """As ``logging.Formatter`` writes it; the seconds part is formatted once a second
        (the handler's lock orders the calls)."""
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second:
            self._second = second
            self._stamp = time.strftime(self.default_time_format, self.converter(record.created))
        return f"{self._stamp},{int(record.msecs):03d}"  # logging's default_msec_format

    def format(self, record: logging.LogRecord) -> str:
        if not record.exc_info and not record.exc_text and not record.stack_info:
            # what ``logging.Formatter.format`` makes of this format, without its general steps
            record.message = record.getMessage()
            record.asctime = self.formatTime(record)
            line = f"{record.asctime} {record.levelname} {record.name}: {record.message}"
        else:
            line = super().format(record)
        extra = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        if not extra:
            return line
        head, sep, tail = line.partition("\n")
        return f"{head} {extra}{sep}{tail}"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the extra fields, and
    ``exception`` (type, message, traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in _fields(record).items():
            body.setdefault(key, value if isinstance(value, (str, int, float, bool))
                            else str(value))
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            body["exception"] = {
                "type": type(exc).__qualname__, "message": str(exc),
                "traceback": "".join(traceback.format_exception(exc)),
            }
        return msgspec.json.encode(body).decode()
