"""AG-UI's view is the checkpoint's (issue 27): the real ``@ag-ui/client`` against ``serve``.

Each test drives ``HttpAgent`` (``agui_client/driver.mjs``, scenario ``script``) against a real
server on loopback serving ``agui_truth_flows:review``, changes the conversation behind
AG-UI's back (a native cancel, answer or ``DELETE``, a branch, a kill, a SIGTERM, a retry)
and checks that what AG-UI then says (``MESSAGES_SNAPSHOT``, the outcome, what a resend runs)
is what the checkpoint's lineage says. Overlaps are made with marker-file gates and the
driver's ``started`` marker (written on ``RUN_STARTED``), never with sleeps; handler runs are
counted in the flow's ``runs.log``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_agui_e2e import CLIENT, DRIVER, _node_missing

TARGET = "agui_truth_flows:review"
YES = [{"status": "resolved", "payload": True}]
DEADLINE = 60.0


class Drivers:
    """Starts driver processes (several may run at once) and reads their one JSON line."""

    def __init__(self) -> None:
        self.running: list[subprocess.Popen[str]] = []

    def start(self, url: str, **given: Any) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            ["node", str(DRIVER), url, "script", json.dumps(given)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=CLIENT,
        )
        self.running.append(process)
        return process

    @staticmethod
    def result(process: subprocess.Popen[str], timeout: float = 120) -> dict[str, Any]:
        out, err = process.communicate(timeout=timeout)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        assert lines, f"the driver printed no result; stderr: {err[-2000:]}"
        result: dict[str, Any] = json.loads(lines[-1])
        assert result["ok"], result
        return result

    def run(self, url: str, **given: Any) -> dict[str, Any]:
        return self.result(self.start(url, **given))

    def stop(self) -> None:
        for process in self.running:
            if process.poll() is None:
                process.kill()
                process.communicate()


@pytest.fixture
def drivers() -> Any:
    missing = _node_missing()
    if missing is not None:
        if os.environ.get("CHECKFLOW_REQUIRE_NODE") == "1":
            pytest.fail(f"CHECKFLOW_REQUIRE_NODE=1 but {missing}")
        pytest.skip(missing)
    started = Drivers()
    yield started
    started.stop()


def serve(start_server: Any, storage: str | None = None, *extra: str) -> Any:
    return start_server(TARGET, storage, "--adapters", "native,agui", *extra)


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def lines(transcript: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """A transcript as (role, text) pairs: assistant message ids are the server's to choose."""
    return [(m["role"], m.get("content") or "") for m in transcript]


def last_snapshot(run: dict[str, Any]) -> list[tuple[str, str]]:
    assert run["snapshots"], f"the run sent no MESSAGES_SNAPSHOT: {run['events']}"
    return lines(run["snapshots"][-1])


def handler_runs(gates: Any) -> list[str]:
    log = Path(gates.folder) / "runs.log"
    return log.read_text().splitlines() if log.exists() else []


def interrupt_ids(run: dict[str, Any]) -> list[str]:
    outcome = run["outcome"] or {}
    return [i["id"] for i in outcome.get("interrupts", ())]


def native(url: str, thread: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/v1/conversations/{thread}", timeout=30)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def wait_started(marker: Path, process: subprocess.Popen[str]) -> None:
    """Until the driver saw RUN_STARTED (``marker``) or it ended without it (a refusal)."""
    end = time.monotonic() + DEADLINE
    while not marker.exists() and process.poll() is None:
        assert time.monotonic() < end, "the second client's stream never opened"
        time.sleep(0.005)


PUBLISHED = [("user", "tea"), ("assistant", "draft: tea"), ("assistant", "published: tea")]


def published_thread(drivers: Drivers, url: str, thread: str, state: Path) -> dict[str, Any]:
    """Turn 1 (``m1`` "tea") pauses, the client resumes it: the thread's good first line."""
    done = drivers.run(url, threadId=thread, state=str(state), steps=[
        {"add": {"id": "m1", "text": "tea"}}, {"resume": "pending", "answers": YES}])
    paused, resumed = done["runs"]
    assert paused["outcome"]["type"] == "interrupt", paused
    assert resumed["outcome"] == {"type": "success"}, resumed
    return done


# -- a native cancel ---------------------------------------------------------------------------


@pytest.mark.parametrize("via", ["the owner", "another process"])
def test_a_native_cancel_drops_the_turn_from_the_transcript_and_a_resend_runs_it(
    start_server: Any, drivers: Drivers, gates: Any, tmp_path: Path, via: str
) -> None:
    storage = f"file:{tmp_path / 'store'}"
    server = serve(start_server, storage)
    other = server if via == "the owner" else serve(start_server, storage)
    thread, state = uuid.uuid4().hex, tmp_path / "agent.json"
    published_thread(drivers, server.url, thread, state)
    held = drivers.start(server.url, threadId=thread, state=str(state),
                         steps=[{"add": {"id": "m2", "text": "hold:c1 coffee"}}])
    gates.wait_entered("c1")  # the draft's superstep committed; the review is held
    cancelled = httpx.post(f"{other.url}/v1/conversations/{thread}/cancel", timeout=30)
    assert cancelled.status_code == 200 and cancelled.json()["cancelled"] is True
    (run,) = drivers.result(held)["runs"]
    assert run["rejected"] is None and run["outcome"] == {"type": "cancelled"}, run

    (reconnect,) = drivers.run(other.url, threadId=thread, steps=[{}])["runs"]
    assert last_snapshot(reconnect) == PUBLISHED  # neither the message nor its draft
    assert reconnect["outcome"] == {"type": "cancelled"}, reconnect  # how the last turn ended

    gates.release("c1")
    (resent,) = drivers.run(other.url, threadId=thread, steps=[
        {"messages": [user("m1", "tea"), user("m2", "hold:c1 coffee")]}])["runs"]
    (asked,) = resent["outcome"]["interrupts"]
    assert asked["metadata"]["checkflow"]["requestData"]["draft"] == "hold:c1 coffee"
    assert handler_runs(gates).count("draft:hold:c1 coffee") == 2  # it ran again


# -- a branch ----------------------------------------------------------------------------------


def test_after_a_branch_the_snapshot_shows_only_the_heads_line(
    start_server: Any, drivers: Drivers, tmp_path: Path
) -> None:
    server = serve(start_server)
    thread, state = uuid.uuid4().hex, tmp_path / "agent.json"
    done = published_thread(drivers, server.url, thread, state)
    (interrupt,) = done["runs"][0]["outcome"]["interrupts"]
    pause = interrupt["metadata"]["checkflow"]["resumeToken"]["snapshotId"]
    (branch,) = drivers.run(server.url, threadId=thread, state=str(state), steps=[{
        "forwardedProps": {"checkflow": {"fromSnapshot": pause}},
        "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": False}],
    }])["runs"]
    assert branch["outcome"] == {"type": "success"}, branch
    head_line = [("user", "tea"), ("assistant", "draft: tea"), ("assistant", "dropped")]
    assert last_snapshot(branch) == head_line
    (reconnect,) = drivers.run(server.url, threadId=thread, steps=[{}])["runs"]
    assert last_snapshot(reconnect) == head_line


# -- a native answer ---------------------------------------------------------------------------


def test_an_answer_given_over_the_native_api_is_in_the_agui_transcript(
    start_server: Any, drivers: Drivers, tmp_path: Path
) -> None:
    server = serve(start_server)
    thread = uuid.uuid4().hex
    (paused,) = drivers.run(server.url, threadId=thread,
                            steps=[{"add": {"id": "m1", "text": "tea"}}])["runs"]
    (interrupt_id,) = interrupt_ids(paused)
    answered = httpx.post(f"{server.url}/v1/conversations/{thread}/runs",
                          json={"responses": {interrupt_id: True}}, timeout=30)
    assert answered.status_code == 200, answered.text
    (reconnect,) = drivers.run(server.url, threadId=thread, steps=[{}])["runs"]
    assert reconnect["outcome"] == {"type": "success"}, reconnect
    assert last_snapshot(reconnect) == PUBLISHED


# -- a native DELETE ---------------------------------------------------------------------------


def test_a_native_delete_leaves_no_agui_state(
    start_server: Any, drivers: Drivers, gates: Any, tmp_path: Path
) -> None:
    server = serve(start_server)
    thread, state = uuid.uuid4().hex, tmp_path / "agent.json"
    (paused,) = drivers.run(server.url, threadId=thread, state=str(state),
                            steps=[{"add": {"id": "m1", "text": "tea"}}])["runs"]
    assert paused["outcome"]["type"] == "interrupt"
    deleted = httpx.delete(f"{server.url}/v1/conversations/{thread}", timeout=30)
    assert deleted.status_code == 204, deleted.text

    (stale,) = drivers.run(server.url, state=str(tmp_path / "agent.json"),
                           steps=[{"resume": "pending", "answers": YES}])["runs"]
    assert [e["code"] for e in stale["runErrors"]] == ["unknown_interrupt"], stale
    (empty,) = drivers.run(server.url, threadId=thread, steps=[{}])["runs"]
    assert last_snapshot(empty) == []
    (again,) = drivers.run(server.url, threadId=thread,
                           steps=[{"messages": [user("m1", "tea")]}])["runs"]
    assert again["outcome"]["type"] == "interrupt", again
    assert handler_runs(gates).count("draft:tea") == 2  # the first message ran anew


# -- a retry with the same runId ---------------------------------------------------------------


def test_a_retry_of_a_committed_run_replays_its_outcome_and_runs_no_handler(
    start_server: Any, drivers: Drivers, gates: Any, tmp_path: Path
) -> None:
    server = serve(start_server)
    thread, state = uuid.uuid4().hex, tmp_path / "agent.json"
    first = {"runId": "run-1", "add": {"id": "m1", "text": "tea"}}
    (paused,) = drivers.run(server.url, threadId=thread, state=str(state),
                            steps=[first])["runs"]
    lost = tmp_path / "lost.json"  # the client that never read its resume's answer
    shutil.copy(state, lost)
    answer = {"runId": "run-2", "resume": "pending", "answers": YES}
    (resumed,) = drivers.run(server.url, state=str(state), steps=[answer])["runs"]
    assert resumed["outcome"] == {"type": "success"}, resumed

    (retried,) = drivers.run(server.url, state=str(lost), steps=[answer])["runs"]
    assert retried["runErrors"] == [] and retried["outcome"] == resumed["outcome"], retried
    assert retried["runId"] == "run-2"
    assert "published: tea" in "".join(retried["deltas"])
    assert last_snapshot(retried) == PUBLISHED
    (again,) = drivers.run(server.url, threadId=thread,
                           steps=[{"runId": "run-1", "messages": [user("m1", "tea")]}])["runs"]
    assert again["runErrors"] == [] and interrupt_ids(again) == interrupt_ids(paused)
    assert handler_runs(gates) == ["draft:tea", "review:tea", "decide:tea"]


def test_a_retry_while_the_run_runs_attaches_to_it(
    start_server: Any, drivers: Drivers, gates: Any, tmp_path: Path
) -> None:
    server = serve(start_server)
    thread = uuid.uuid4().hex
    first = {"runId": "run-1", "add": {"id": "m1", "text": "hold:r1 tea"}}
    owner = drivers.start(server.url, threadId=thread, steps=[first])
    gates.wait_entered("r1")
    marker = tmp_path / "retry.started"
    retry = drivers.start(server.url, threadId=thread, steps=[{
        "runId": "run-1", "messages": [user("m1", "hold:r1 tea")], "started": str(marker)}])
    wait_started(marker, retry)
    gates.release("r1")
    (ran,) = drivers.result(owner)["runs"]
    (attached,) = drivers.result(retry)["runs"]
    assert attached["rejected"] is None, attached["rejected"]
    assert attached["outcome"] == ran["outcome"] and interrupt_ids(ran), (ran, attached)
    assert last_snapshot(attached) == last_snapshot(ran)
    assert handler_runs(gates) == ["draft:hold:r1 tea", "review:hold:r1 tea"]


def test_a_retry_from_another_process_while_the_run_runs_attaches_to_it(
    start_server: Any, drivers: Drivers, gates: Any, tmp_path: Path
) -> None:
    storage = f"file:{tmp_path / 'store'}"
    owner_server, other = serve(start_server, storage), serve(start_server, storage)
    thread = uuid.uuid4().hex
    first = {"runId": "run-1", "add": {"id": "m1", "text": "hold:r2 tea"}}
    owner = drivers.start(owner_server.url, threadId=thread, steps=[first])
    gates.wait_entered("r2")
    marker = tmp_path / "retry.started"
    retry = drivers.start(other.url, threadId=thread, steps=[{
        "runId": "run-1", "messages": [user("m1", "hold:r2 tea")], "started": str(marker)}])
    wait_started(marker, retry)
    gates.release("r2")
    (ran,) = drivers.result(owner)["runs"]
    (attached,) = drivers.result(retry)["runs"]
    assert attached["rejected"] is None, attached["rejected"]
    assert attached["outcome"] == ran["outcome"] and interrupt_ids(ran), (ran, attached)
    assert last_snapshot(attached) == last_snapshot(ran)
    assert "STEP_STARTED" not in attached["events"]  # a non-owner sees commits, not steps
    assert handler_runs(gates) == ["draft:hold:r2 tea", "review:hold:r2 tea"]


# -- a reconnect (messages: []) ----------------------------------------------------------------


def _reconnect_during(drivers: Drivers, url: str, thread: str, gates: Any, gate: str,
                      tmp_path: Path, held: subprocess.Popen[str]) -> tuple[Any, Any]:
    gates.wait_entered(gate)
    marker = tmp_path / f"{gate}.started"
    follower = drivers.start(url, threadId=thread, steps=[{"started": str(marker)}])
    wait_started(marker, follower)
    gates.release(gate)
    (ran,) = drivers.result(held)["runs"]
    (followed,) = drivers.result(follower)["runs"]
    return ran, followed


@pytest.mark.parametrize("via", ["the owner", "another process"])
def test_a_reconnect_during_a_first_and_a_later_turn_follows_it_to_its_end(
    start_server: Any, drivers: Drivers, gates: Any, tmp_path: Path, via: str
) -> None:
    storage = f"file:{tmp_path / 'store'}"
    server = serve(start_server, storage)
    other = server if via == "the owner" else serve(start_server, storage)
    thread, state = uuid.uuid4().hex, tmp_path / "agent.json"
    for gate, text, step in (("g1", "hold:g1 tea", "m1"), ("g2", "hold:g2 coffee", "m2")):
        held = drivers.start(server.url, threadId=thread, state=str(state),
                             steps=[{"add": {"id": step, "text": text}}])
        ran, followed = _reconnect_during(drivers, other.url, thread, gates, gate,
                                          tmp_path, held)
        assert followed["rejected"] is None, (gate, followed["rejected"])
        assert interrupt_ids(ran) and followed["outcome"] == ran["outcome"], (gate, followed)
        assert ("assistant", f"draft: {text}") in last_snapshot(followed), gate
        assert last_snapshot(followed) == last_snapshot(ran), gate
        (after,) = drivers.run(other.url, threadId=thread, steps=[{}])["runs"]
        assert after["outcome"] == ran["outcome"], gate  # after the end: the outcome
        (resumed,) = drivers.run(server.url, state=str(state),
                                 steps=[{"resume": "pending", "answers": YES}])["runs"]
        assert resumed["outcome"] == {"type": "success"}, (gate, resumed)


def test_a_follower_in_another_process_sees_each_superstep_as_it_commits(
    start_server: Any, drivers: Drivers, gates: Any, tmp_path: Path
) -> None:
    storage = f"file:{tmp_path / 'store'}"
    owner, other = serve(start_server, storage), serve(start_server, storage)
    thread = uuid.uuid4().hex
    held = drivers.start(owner.url, threadId=thread,
                         steps=[{"add": {"id": "m1", "text": "hold:s2 tea"}}])
    gates.wait_entered("s2")  # superstep 1 (the draft) committed; superstep 2 is held
    seen = tmp_path / "follower.text"
    follower = drivers.start(other.url, threadId=thread, steps=[{"text": str(seen)}])
    end = time.monotonic() + DEADLINE
    while not seen.exists():  # the draft arrives while the turn is still held
        assert follower.poll() is None, "the follower ended before the turn did"
        assert time.monotonic() < end, "the follower never saw the committed draft"
        time.sleep(0.005)
    assert seen.read_text() == "draft: hold:s2 tea"
    gates.release("s2")
    (ran,) = drivers.result(held)["runs"]
    (followed,) = drivers.result(follower)["runs"]
    assert followed["outcome"] == ran["outcome"] and interrupt_ids(ran), followed
    assert "STEP_STARTED" not in followed["events"]  # steps are the owner's alone


# -- a kill mid-turn, then a restart -----------------------------------------------------------


def test_a_kill_mid_turn_then_a_restart_shows_the_lineage_and_the_failure(
    start_server: Any, drivers: Drivers, gates: Any, tmp_path: Path
) -> None:
    storage = f"file:{tmp_path / 'store'}"
    server = serve(start_server, storage)
    thread, state = uuid.uuid4().hex, tmp_path / "agent.json"
    published_thread(drivers, server.url, thread, state)
    good = native(server.url, thread)["resume_token"]
    held = drivers.start(server.url, threadId=thread, state=str(state),
                         steps=[{"add": {"id": "m2", "text": "hold:k1 coffee"}}])
    gates.wait_entered("k1")  # the draft's superstep is committed, the turn is mid-way
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(30)
    drivers.result(held)  # whatever the client saw of a server that vanished

    restarted = serve(start_server, storage)
    began = time.monotonic()
    (reconnect,) = drivers.run(restarted.url, threadId=thread, steps=[{}])["runs"]
    assert time.monotonic() - began < 30  # at once: not after the 300 s lease
    assert last_snapshot(reconnect) == PUBLISHED  # the lineage: the killed turn is not on it
    assert [e["code"] for e in reconnect["runErrors"]] == ["turn_failed"], reconnect
    state_now = native(restarted.url, thread)
    assert state_now["resume_token"] == good and state_now["status"] == "idle"

    gates.release("k1")
    (resent,) = drivers.run(restarted.url, threadId=thread, steps=[
        {"messages": [user("m1", "tea"), user("m2", "hold:k1 coffee")]}])["runs"]
    assert resent["rejected"] is None and interrupt_ids(resent), resent  # no stale lease


# -- SIGTERM -----------------------------------------------------------------------------------


def test_sigterm_ends_a_running_stream_properly_and_keeps_the_last_good_head(
    start_server: Any, drivers: Drivers, gates: Any, tmp_path: Path
) -> None:
    storage = f"file:{tmp_path / 'store'}"
    server = serve(start_server, storage, "--shutdown-timeout", "2")
    thread, state = uuid.uuid4().hex, tmp_path / "agent.json"
    published_thread(drivers, server.url, thread, state)
    good = native(server.url, thread)["resume_token"]
    held = drivers.start(server.url, threadId=thread, state=str(state),
                         steps=[{"add": {"id": "m2", "text": "hold:s1 coffee"}}])
    gates.wait_entered("s1")  # never released: only the shutdown can end this turn
    began = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    (run,) = drivers.result(held, timeout=60)["runs"]
    assert time.monotonic() - began < 2 + 10
    assert run["rejected"] is None, run["rejected"]
    assert run["events"][-1] in {"RUN_FINISHED", "RUN_ERROR"}, run["events"]
    if run["events"][-1] == "RUN_FINISHED":
        assert run["outcome"] == {"type": "cancelled"}, run
    server.process.wait(30)

    restarted = serve(start_server, storage)
    state_now = native(restarted.url, thread)
    assert state_now["resume_token"] == good and state_now["status"] == "idle"
    (reconnect,) = drivers.run(restarted.url, threadId=thread, steps=[{}])["runs"]
    assert last_snapshot(reconnect) == PUBLISHED
