"""``python -m checkflow serve`` as a real process: a failed run's ERROR record in text and
JSON, the access log and log level from flags and ``CHECKFLOW_*`` variables, and ``--otel``
exporting the run's spans to an OTLP/HTTP receiver on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from served_process import Receiver, serving

from checkflow.cli import main


def fail_a_run(url: str, conversation: str = "c-1") -> None:
    response = httpx.post(f"{url}/v1/conversations/{conversation}/runs",
                          json={"message": "boom"}, timeout=30)
    assert response.status_code == 200 and response.json()["status"] == "failed"


def test_a_failed_run_logs_one_error_record_with_its_ids_in_text() -> None:
    with serving() as server:
        fail_a_run(server.url)
        assert server.wait_for(lambda: any(" ERROR " in line for line in server.stderr))
        assert server.wait_for(lambda: any('"POST /v1/conversations/c-1/runs' in line
                                           for line in server.stderr))  # the access log
    errors = [line for line in server.stderr if " ERROR " in line]
    assert len(errors) == 1, server.stderr
    (record,) = errors
    assert "checkflow.hosting: workflow 'approval' failed in conversation 'c-1'" in record
    for field in ("workflow_name=approval", "conversation_id=c-1",
                  "checkpoint_id=conversation-", "snapshot_id="):
        assert field in record, record
    text = "".join(server.stderr)
    assert "RuntimeError: the ask executor exploded" in text  # the traceback follows
    assert " INFO " in text  # the default level is info


def test_json_lines_parse_and_carry_the_ids_and_env_settings_apply() -> None:
    env = {"CHECKFLOW_LOG_FORMAT": "json", "CHECKFLOW_ACCESS_LOG": "false",
           "CHECKFLOW_LOG_LEVEL": "warning"}
    with serving(env=env) as server:
        fail_a_run(server.url)
        assert server.wait_for(lambda: any('"ERROR"' in line for line in server.stderr))
        httpx.get(f"{server.url}/healthz", timeout=30)
    records = [json.loads(line) for line in server.stderr]  # every line is one object
    assert [r["level"] for r in records] == ["ERROR"], records  # warning: no INFO, no access
    (record,) = records
    assert record["logger"] == "checkflow.hosting"
    assert record["workflow_name"] == "approval" and record["conversation_id"] == "c-1"
    assert record["checkpoint_id"].startswith("conversation-")
    assert record["snapshot_id"] and record["checkpoint_id"] in record["message"]
    assert record["exception"]["type"] == "WorkflowRunError"
    assert "the ask executor exploded" in record["exception"]["traceback"]
    assert "trace_id" not in record  # tracing is off


def test_flags_win_over_the_environment() -> None:
    env = {"CHECKFLOW_LOG_FORMAT": "json", "CHECKFLOW_ACCESS_LOG": "false"}
    with serving("--log-format", "text", "--access-log", env=env) as server:
        httpx.get(f"{server.url}/healthz", timeout=30)
        assert server.wait_for(lambda: any('"GET /healthz' in line for line in server.stderr))
    assert not server.stderr[0].startswith("{")


@pytest.mark.parametrize(("variable", "value"), [("CHECKFLOW_LOG_LEVEL", "loud"),
                                                 ("CHECKFLOW_LOG_FORMAT", "xml"),
                                                 ("CHECKFLOW_ACCESS_LOG", "maybe")])
def test_a_bad_environment_value_is_refused_naming_the_variable(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(["serve", "tests.telemetry.telemetry_flows:workflow"]) == 2
    error = capsys.readouterr().err
    assert variable in error and repr(value) in error


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def test_serve_otel_exports_the_runs_spans_over_otlp_http(receiver: Receiver) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SERVICE_NAME": "telemetry-e2e",
           "OTEL_BSP_SCHEDULE_DELAY": "50", "CHECKFLOW_LOG_FORMAT": "json"}
    trace_id, parent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    with serving("--otel", env=env) as server:
        response = httpx.post(f"{server.url}/v1/conversations/o-1/runs",
                              json={"message": "tea"}, timeout=30,
                              headers={"traceparent": f"00-{trace_id}-{parent}-01"})
        assert response.json()["status"] == "awaiting_responses"
        fail_a_run(server.url, "o-2")
        names = {"POST /v1/conversations/{conversation_id}/runs", "workflow.run",
                 "workflow.superstep", "executor.process", "checkpoint.commit"}
        assert receiver.wait_for(lambda: names <= {s.name for s in receiver.spans}
                                 and len([s for s in receiver.spans
                                          if s.name == "workflow.run"]) == 2)
        assert server.wait_for(lambda: any('"ERROR"' in line for line in server.stderr))
    assert {"service.name": "telemetry-e2e"}.items() <= receiver.resources[0].items()
    spans = list(receiver.spans)
    (request,) = [s for s in spans if s.parent_span_id == bytes.fromhex(parent)]
    assert request.trace_id.hex() == trace_id
    (run,) = [s for s in spans if s.name == "workflow.run" and s.trace_id.hex() == trace_id]
    assert run.parent_span_id == request.span_id
    attributes = {a.key: a.value for a in run.attributes}
    assert attributes["gen_ai.conversation.id"].string_value == "o-1"
    assert attributes["run.status"].string_value == "awaiting_responses"
    error = next(json.loads(line) for line in server.stderr if '"ERROR"' in line)
    failed_run = next(s for s in spans if s.name == "workflow.run"
                      and s.trace_id.hex() == error["trace_id"])
    assert failed_run.status.code == 2  # STATUS_CODE_ERROR
    assert len(error["span_id"]) == 16
