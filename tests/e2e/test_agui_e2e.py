"""AG-UI end to end: the official ``@ag-ui/client`` (Node) against ``python -m checkflow serve``.

The driver (``agui_client/driver.mjs``) runs ``HttpAgent`` scenarios and prints one JSON line;
the assertions are here. The Node tests skip, saying why, when node/npm or the installed
``node_modules`` are missing (``cd tests/e2e/agui_client && npm ci``); with
``CHECKFLOW_REQUIRE_NODE=1`` (CI) they fail instead. Raw-HTTP tests (the contract violations
the real client refuses to send, and a client that disconnects) need no Node.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.agui_wire import RESUME_VIOLATIONS, parse_sse

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "agui_client"
DRIVER = CLIENT / "driver.mjs"


def _node_missing() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node/npm not found on PATH"
    if not (CLIENT / "node_modules" / "@ag-ui" / "client" / "package.json").exists():
        where = CLIENT.relative_to(HERE.parents[1])
        return f"@ag-ui/client is not installed: run `npm ci` in {where}"
    return None


@pytest.fixture
def drive() -> Any:
    """``drive(url, scenario, **input)`` -> the driver's JSON result (asserted ``ok``)."""
    missing = _node_missing()
    if missing is not None:
        if os.environ.get("CHECKFLOW_REQUIRE_NODE") == "1":
            pytest.fail(f"CHECKFLOW_REQUIRE_NODE=1 but {missing}")
        pytest.skip(missing)

    def run(url: str, scenario: str, **given: Any) -> dict[str, Any]:
        done = subprocess.run(
            ["node", str(DRIVER), url, scenario, json.dumps(given)],
            capture_output=True, text=True, timeout=120, cwd=CLIENT,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        assert lines, f"the driver printed no result; stderr: {done.stderr[-2000:]}"
        result: dict[str, Any] = json.loads(lines[-1])
        assert result["ok"], result
        return result

    return run


def serve(start_server: Any, target: str, storage: str | None = None) -> Any:
    return start_server(f"agui_flows:{target}", storage, "--adapters", "native,agui")


def texts(result: dict[str, Any], role: str = "assistant") -> list[str]:
    return [m["content"] for m in result["messages"] if m["role"] == role]


def native(url: str, thread: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/v1/conversations/{thread}", timeout=30)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def assert_well_formed(run: dict[str, Any]) -> None:
    assert run["rejected"] is None, run["rejected"]
    assert run["events"][0] == "RUN_STARTED"
    assert run["events"][-1] in {"RUN_FINISHED", "RUN_ERROR"}


# -- the seven scenarios with the real client ------------------------------------------------


def test_a_plain_turn_lands_in_agent_messages(start_server: Any, drive: Any) -> None:
    server = serve(start_server, "chat")
    result = drive(server.url, "turn", text="hello")
    (run,) = result["runs"]
    assert_well_formed(run)
    assert run["outcome"] == {"type": "success"}
    assert texts(result, "user") == ["hello"]
    assert texts(result) == ["heard 1: hello"]
    assert "STEP_STARTED" in run["events"] and "MESSAGES_SNAPSHOT" in run["events"]
    assert result["errors"] == []


def test_every_event_the_client_reads_carries_a_millisecond_timestamp(
    start_server: Any, drive: Any
) -> None:
    server = serve(start_server, "approval")
    before = time.time_ns() // 1_000_000
    result = drive(server.url, "pause-resume", text="tea")
    after = time.time_ns() // 1_000_000
    paused, resumed = result["runs"]
    assert_well_formed(paused)
    assert_well_formed(resumed)
    stamps = paused["stamps"] + resumed["stamps"]
    assert [kind for kind, _ in stamps] == paused["events"] + resumed["events"]
    for kind, stamp in stamps:
        assert isinstance(stamp, int) and before <= stamp <= after, (kind, stamp)
    assert result["errors"] == []


def test_a_pause_then_a_restart_then_resume_with_the_client_helper(
    start_server: Any, drive: Any, tmp_path: Path
) -> None:
    storage = f"file:{tmp_path / 'store'}"
    state = str(tmp_path / "agent.json")
    server = serve(start_server, "approval", storage)
    paused = drive(server.url, "turn", text="tea", state=state)
    assert_well_formed(paused["runs"][0])
    assert paused["runs"][0]["outcome"]["type"] == "interrupt"
    conversation = native(server.url, paused["threadId"])
    pending = conversation["pending_requests"]
    assert [i["id"] for i in paused["pendingInterrupts"]] == [p["request_id"] for p in pending]
    assert [i["responseSchema"] for i in paused["pendingInterrupts"]] == [
        p["response_schema"] for p in pending]
    server.stop()

    restarted = serve(start_server, "approval", storage)
    resumed = drive(restarted.url, "resume", state=state,
                    answers=[{"status": "resolved", "payload": True}])
    (run,) = resumed["runs"]
    assert_well_formed(run)
    assert run["runId"] != paused["runs"][0]["runId"]
    assert run["outcome"] == {"type": "success"}
    assert resumed["pendingInterrupts"] == []
    assert texts(resumed) == ["published: Five things about tea."]
    assert native(restarted.url, paused["threadId"])["status"] == "idle"


def test_two_interrupts_resumed_in_one_call(start_server: Any, drive: Any) -> None:
    server = serve(start_server, "two_requests")
    result = drive(server.url, "pause-resume", text="cake",
                   answers=[{"status": "resolved", "payload": 3},
                            {"status": "resolved", "payload": 4}])
    paused, resumed = result["runs"]
    assert len(paused["outcome"]["interrupts"]) == 2
    assert_well_formed(resumed)
    assert resumed["outcome"] == {"type": "success"}
    assert sorted(texts(result)) == ["left: 3", "right: 4"] or sorted(texts(result)) == [
        "left: 4", "right: 3"]


def test_one_of_two_interrupts_resumed_as_cancelled(start_server: Any, drive: Any) -> None:
    server = serve(start_server, "two_requests")
    result = drive(server.url, "pause-resume", text="cake",
                   answers=[{"status": "resolved", "payload": 3}, {"status": "cancelled"}])
    assert result["runs"][1]["outcome"] == {"type": "success"}
    said = sorted(t.split(": ")[1] for t in texts(result))
    assert said == ["3", "cancelled"]


def test_a_workflow_error_reaches_the_client_and_the_thread_runs_again(
    start_server: Any, drive: Any
) -> None:
    server = serve(start_server, "approval")
    result = drive(server.url, "turns", texts=["fail:tea", "coffee"])
    failed, again = result["runs"]
    assert failed["rejected"] is None and failed["events"][-1] == "RUN_ERROR"
    assert [e["code"] for e in failed["runErrors"]] == ["workflow_failed"]
    assert_well_formed(again)
    assert again["outcome"]["type"] == "interrupt"
    (interrupt,) = again["outcome"]["interrupts"]
    assert interrupt["metadata"]["checkflow"]["requestData"]["draft"] == (
        "Five things about coffee.")


def test_two_threads_stay_isolated(start_server: Any, drive: Any) -> None:
    server = serve(start_server, "chat")
    result = drive(server.url, "isolation", texts=["first", "second"])
    first, second = result["messagesByThread"]
    assert [m["content"] for m in first] == ["first", "heard 1: first"]
    assert [m["content"] for m in second] == ["second", "heard 1: second"]


def test_a_second_run_on_a_busy_thread_is_refused_with_409(
    start_server: Any, drive: Any, gates: Any
) -> None:
    server = serve(start_server, "approval")
    result = drive(server.url, "busy", hold="busy-1", gates=str(gates.folder))
    held, refused = result["runs"]
    assert refused["rejected"]["status"] == 409
    assert refused["events"] == []
    assert_well_formed(held)
    assert held["outcome"]["type"] == "interrupt"


def test_the_whole_history_resent_is_not_fed_twice(start_server: Any, drive: Any) -> None:
    server = serve(start_server, "chat")
    result = drive(server.url, "turns", texts=["one", "two", "three"])
    assert texts(result) == ["heard 1: one", "heard 1: two", "heard 1: three"]


def test_a_thread_paused_over_agui_is_answered_over_the_native_api(
    start_server: Any, drive: Any, tmp_path: Path
) -> None:
    server = serve(start_server, "approval")
    paused = drive(server.url, "turn", text="tea", state=str(tmp_path / "a.json"))
    thread = paused["threadId"]
    (interrupt,) = paused["pendingInterrupts"]
    answered = httpx.post(f"{server.url}/v1/conversations/{thread}/runs",
                          json={"responses": {interrupt["id"]: False}}, timeout=30)
    assert answered.status_code == 200, answered.text
    assert answered.json()["status"] == "idle" and answered.json()["outputs"] == ["dropped"]
    again = drive(server.url, "resume", state=str(tmp_path / "a.json"),
                  answers=[{"status": "resolved", "payload": True}])
    assert [e["code"] for e in again["runs"][0]["runErrors"]] == ["already_resolved"]


# -- raw HTTP against the same server ---------------------------------------------------------


def _post(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = httpx.post(f"{url}/agui", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return parse_sse(response.text)


def _input(thread: str, messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": uuid.uuid4().hex, "messages": messages, **extra}


def test_every_resume_violation_is_run_error_with_its_code_over_real_http(
    start_server: Any,
) -> None:
    server = serve(start_server, "two_requests")
    for code, make in RESUME_VIOLATIONS.items():
        thread = f"raw-{code}"
        first = _post(server.url, _input(thread, [{"id": "m1", "role": "user",
                                                   "content": "cake"}]))
        a, b = (i["id"] for i in first[-1]["outcome"]["interrupts"])
        before = native(server.url, thread)
        refused = _post(server.url, {**_input(thread, []), **make(a, b)})
        assert [e["type"] for e in refused] == ["RUN_STARTED", "RUN_ERROR"], (code, refused)
        assert refused[1]["code"] == code
        after = native(server.url, thread)
        assert after["resume_token"] == before["resume_token"], code
        assert after["pending_requests"] == before["pending_requests"], code
        answers = [{"interruptId": i, "status": "resolved", "payload": 2} for i in (a, b)]
        done = _post(server.url, _input(thread, [], resume=answers))
        assert done[-1]["outcome"] == {"type": "success"}, (code, done[-1])


def test_a_client_that_disconnects_cancels_the_run_and_keeps_the_last_good_head(
    start_server: Any, gates: Any
) -> None:
    server = serve(start_server, "approval")
    thread = "leaver"
    first = _post(server.url, _input(thread, [{"id": "m1", "role": "user", "content": "tea"}]))
    (interrupt,) = first[-1]["outcome"]["interrupts"]
    _post(server.url, _input(thread, [], resume=[{"interruptId": interrupt["id"],
                                                  "status": "resolved", "payload": True}]))
    good = native(server.url, thread)
    body = json.dumps(_input(thread, [{"id": "m2", "role": "user",
                                       "content": "hold:leave"}])).encode()
    address = server.url.removeprefix("http://").split(":")
    # a raw socket: closing it is a disconnect the server sees, with nothing read after it
    with socket.create_connection((address[0], int(address[1])), timeout=30) as sock:
        sock.sendall(b"POST /agui HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        seen = b""
        while b"RUN_STARTED" not in seen:
            chunk = sock.recv(4096)
            assert chunk, f"the server closed the stream before RUN_STARTED: {seen!r}"
            seen += chunk
        assert seen.startswith(b"HTTP/1.1 200")
        gates.wait_entered("leave")
    gates.release("leave")  # the run goes on to its next safe point, then sees it was left
    probe = _input(thread, [{"id": "m3", "role": "user", "content": "after"}])
    deadline = time.monotonic() + 30
    while True:  # the conversation is claimed until the cancelled run lets it go
        answer = httpx.post(f"{server.url}/agui", timeout=30, json=probe)
        if answer.status_code != 409 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert answer.status_code == 200, answer.text
    events = parse_sse(answer.text)
    # had the left run gone on, it would have paused on its own draft, and this new message
    # would be refused with resume_required; instead it runs from the last good head
    (asked,) = events[-1]["outcome"]["interrupts"]
    assert asked["metadata"]["checkflow"]["requestData"]["draft"] == "Five things about after."
    after = native(server.url, thread)
    assert after["outputs"] == good["outputs"]
