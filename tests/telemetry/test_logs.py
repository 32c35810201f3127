"""The library's log records, in-process: the failed run's ERROR with its ids as fields,
WARNINGs for a busy refusal, a signature mismatch and an expired lease taken over, and the
trace-context filter stamping records inside a span."""

from __future__ import annotations

import asyncio
import logging
import sys
import time

import pytest
from opentelemetry.sdk.trace import TracerProvider
from telemetry_flows import approval, nested

from checkflow.errors import ConversationBusyError, GraphSignatureMismatchError
from checkflow.hosting import WorkflowHost
from checkflow.sessions import InMemorySessionStore
from checkflow.storage import InMemoryCheckpointStorage
from checkflow.telemetry import TraceContextFilter
from checkflow.workflows import RunStatus
from tests.hosting.hosting_flows import Gate, build


def records(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == level and r.name.startswith("checkflow")]


async def test_a_failed_run_logs_one_error_with_the_ids(caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    host = WorkflowHost(approval())
    await host.run("c-1", message="tea")  # a good head first
    good = (await host.get_conversation("c-1")).resume_token
    with caplog.at_level(logging.INFO, logger="checkflow"):
        failed = await host.run("c-1", message="boom")
    assert failed.status is RunStatus.FAILED
    (record,) = records(caplog, logging.ERROR)
    assert record.name == "checkflow.hosting"
    assert (record.workflow_name, record.conversation_id) == ("approval", "c-1")  # type: ignore[attr-defined]
    assert record.checkpoint_id == good.checkpoint_id  # type: ignore[attr-defined]
    assert record.good_snapshot_id == good.snapshot_id  # type: ignore[attr-defined]
    assert record.snapshot_id not in (None, good.snapshot_id)  # type: ignore[attr-defined]
    assert record.exc_info is not None and record.exc_info[1] is failed.error


async def test_a_busy_refusal_logs_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    gate = Gate()
    host = WorkflowHost(build(gate))
    held = asyncio.ensure_future(host.run("c-1", message="hold"))
    await asyncio.wait_for(gate.entered.wait(), 10)
    with caplog.at_level(logging.WARNING, logger="checkflow"), pytest.raises(
            ConversationBusyError):
        await host.run("c-1", message="again")
    gate.release.set()
    await asyncio.wait_for(held, 10)
    (record,) = records(caplog, logging.WARNING)
    assert "'c-1' is busy" in record.getMessage()


async def test_a_signature_mismatch_logs_a_warning_naming_the_checkpoint(
    caplog: pytest.LogCaptureFixture
) -> None:
    sessions, storage = InMemorySessionStore(), InMemoryCheckpointStorage()
    await WorkflowHost(approval(), session_store=sessions, checkpoint_storage=storage).run(
        "c-1", message="tea")
    changed = WorkflowHost(nested(), session_store=sessions, checkpoint_storage=storage)
    with caplog.at_level(logging.WARNING, logger="checkflow"), pytest.raises(
            GraphSignatureMismatchError) as refused:
        await changed.run("c-1", message="tea")
    (record,) = records(caplog, logging.WARNING)
    assert refused.value.checkpoint_id in record.getMessage()
    assert record.getMessage().endswith("refused")
    afresh = WorkflowHost(nested(), session_store=sessions, checkpoint_storage=storage,
                          on_signature_mismatch="new_checkpoint")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="checkflow"):
        await afresh.run("c-1", message="tea")
    (record,) = records(caplog, logging.WARNING)
    assert record.getMessage().endswith("starting afresh")


async def test_taking_over_an_expired_lease_logs_a_warning(caplog: pytest.LogCaptureFixture
                                                           ) -> None:
    sessions = InMemorySessionStore()
    host = WorkflowHost(approval(), session_store=sessions)
    await host.run("c-1", message="tea")
    (session_id,) = [s for s in await sessions.list_session_ids()]
    session = await sessions.get(session_id)
    assert session is not None
    session.state["lease"] = {"owner": "another-host", "expires_at": time.time() - 1}
    await sessions.set(session, expected_version=session.version)
    with caplog.at_level(logging.WARNING, logger="checkflow"):
        await WorkflowHost(approval(), session_store=sessions).run("c-1", message="more")
    (record,) = records(caplog, logging.WARNING)
    assert "another-host expired; taking over" in record.getMessage()
    assert session_id in record.getMessage()


def test_the_filter_stamps_trace_and_span_ids_inside_a_span_only() -> None:
    logger = logging.getLogger("checkflow.tests.filter")
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Keep()
    handler.addFilter(TraceContextFilter())
    logger.addHandler(handler)
    try:
        logger.warning("outside")
        with TracerProvider().get_tracer("t").start_as_current_span("inside") as span:
            logger.warning("inside")
    finally:
        logger.removeHandler(handler)
    outside, inside = seen
    assert (outside.trace_id, outside.span_id) == ("", "")  # type: ignore[attr-defined]
    context = span.get_span_context()
    assert inside.trace_id == format(context.trace_id, "032x")  # type: ignore[attr-defined]
    assert inside.span_id == format(context.span_id, "016x")  # type: ignore[attr-defined]


@pytest.mark.parametrize("created", [1_700_000_000.123456, 1_700_000_000.9995, 1_700_000_001.0,
                                     1_764_600_000.5])
def test_the_text_format_keeps_the_standard_time_and_appends_only_extra_fields(
    created: float,
) -> None:
    from checkflow.cli._logging import TextFormatter

    ours = TextFormatter()
    standard = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    for extra in ({}, {"conversation_id": "c-1", "checkpoint_id": None, "_private": 1}):
        record = logging.makeLogRecord({"name": "uvicorn.access", "levelno": logging.INFO,
                                        "levelname": "INFO", "msg": "%s - %d",
                                        "args": ("x", 200), **extra})
        record.created, record.msecs = created, (created - int(created)) * 1000 // 1
        expected = standard.format(record) + (" conversation_id=c-1" if extra else "")
        assert ours.format(record) == expected
        assert ours.format(record) == expected  # the cached second gives the same line


def test_the_text_format_of_a_record_with_a_traceback_is_the_standard_one() -> None:
    from checkflow.cli._logging import TextFormatter

    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.makeLogRecord({"name": "checkflow.x", "levelno": logging.ERROR,
                                        "levelname": "ERROR", "msg": "it failed: %s",
                                        "args": ("a run",), "exc_info": sys.exc_info()})
    standard = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    line = TextFormatter().format(record)
    assert line == standard.format(record) and "ValueError: boom" in line


def test_the_servers_logging_collects_no_caller_thread_or_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from checkflow.cli._logging import LogSettings, configure_logging

    for name in ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing"):
        monkeypatch.setattr(logging, name, getattr(logging, name))  # restored afterwards
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr(root, "level", root.level)
    handler = configure_logging(LogSettings("info", "text", True))
    seen: list[logging.LogRecord] = []
    handler.emit = seen.append  # type: ignore[method-assign]
    logging.getLogger("checkflow.test").warning("hello %s", "there")
    (record,) = seen
    assert record.getMessage() == "hello there"
    assert (record.funcName, record.lineno, record.threadName, record.processName) == (
        "(unknown function)", 0, None, None)
    assert handler.format(record).endswith("WARNING checkflow.test: hello there")
