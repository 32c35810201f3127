"""Shared state over AG-UI end to end: the official ``@ag-ui/client`` against ``serve``.

The server serves ``agui_flows:shared`` with ``--adapters native,agui_flows:shared_adapter``
(clients may write ``theme`` and ``filters``), or ``agui_flows:growing`` (a state that grows
over three supersteps). The client writes with ``agent.setState`` and sends its whole state
with every run, as AG-UI frontends do.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.test_agui_e2e import assert_well_formed, drive, texts
from tests.e2e.test_agui_truth_e2e import DEADLINE, Drivers, drivers

__all__ = ["drive", "drivers"]  # the fixtures, shared with the other AG-UI client tests


def serve_shared(start_server: Any, storage: str | None = None) -> Any:
    return start_server("agui_flows:shared", storage, "--adapters",
                        "native,agui_flows:shared_adapter")


def test_the_client_writes_state_and_the_workflow_reads_it(start_server: Any,
                                                           drive: Any) -> None:
    server = serve_shared(start_server)
    result = drive(server.url, "script", steps=[
        {"add": {"text": "one"}, "state": {"theme": "dark", "filters": {"tags": ["x"]}}},
        {"add": {"text": "two"}},  # sends back the whole state it was told, unchanged
        {"add": {"text": "three"}, "patch": {"theme": "light"}},
    ])
    for run in result["runs"]:
        assert_well_formed(run)
    assert texts(result) == ["one: theme=dark tags=x", "two: theme=dark tags=x",
                             "three: theme=light tags=x"]
    assert result["state"] == {"theme": "light", "filters": {"tags": ["x"], "limit": 10},
                               "turns": 3}
    assert result["errors"] == []


def test_an_undeclared_key_or_a_wrong_type_rejects_the_run_with_422(
    start_server: Any, drive: Any
) -> None:
    server = serve_shared(start_server)
    result = drive(server.url, "script", steps=[
        {"add": {"text": "one"}, "state": {"theme": "dark"}},
        {"add": {"text": "two"}, "patch": {"turns": 40}},
        {"add": {"text": "three"}, "state": {"theme": ["not", "text"]}},
    ])
    ok, undeclared, mistyped = result["runs"]
    assert_well_formed(ok)
    for run, key in ((undeclared, "turns"), (mistyped, "theme")):
        assert run["rejected"]["status"] == 422 and run["events"] == []
        assert run["rejected"]["payload"]["error"]["code"] == "invalid_state"
        assert run["rejected"]["payload"]["error"]["key"] == key
    conversation = httpx.get(f"{server.url}/v1/conversations/{result['threadId']}", timeout=30)
    assert conversation.json()["outputs"] == ["one: theme=dark tags=-"]  # nothing else ran


def test_a_native_cancel_of_a_running_turn_takes_its_write_back(
    start_server: Any, drive: Any, gates: Any, tmp_path: Any
) -> None:
    server = serve_shared(start_server, f"file:{tmp_path / 'store'}")
    thread = uuid.uuid4().hex
    drive(server.url, "script", threadId=thread, state=str(tmp_path / "agent.json"),
          steps=[{"add": {"text": "one"}, "state": {"theme": "dark"}}])
    body = {"threadId": thread, "runId": uuid.uuid4().hex, "state": {"theme": "light"},
            "messages": [{"id": "held", "role": "user", "content": "hold:cancel-me"}]}
    with httpx.Client(timeout=30) as client, client.stream(
            "POST", f"{server.url}/agui", json=body) as stream:
        gates.wait_entered("cancel-me")
        cancelled = client.post(f"{server.url}/v1/conversations/{thread}/cancel")
        assert cancelled.status_code in (200, 202), cancelled.text
        gates.release("cancel-me")
        tail = "".join(stream.iter_text())
    assert '"cancelled"' in tail
    after = drive(server.url, "script", threadId=thread, state=str(tmp_path / "agent.json"),
                  steps=[{"add": {"text": "two"}}])
    assert texts(after)[-1] == "two: theme=dark tags=-"
    assert after["state"]["theme"] == "dark"


def _grown(state: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """The states ``agui_flows:growing`` commits for one turn adding ``count`` per step."""
    states = [state]
    for step in ("first", "second", "third"):
        log = list(state.get("log", []))
        log.extend(f"{step} {len(log) + i}" for i in range(count))
        state = {"log": log, "step": step}
        states.append(state)
    return states


def test_the_client_applies_the_deltas_itself_and_holds_each_committed_state(
    start_server: Any, drive: Any
) -> None:
    server = start_server("agui_flows:growing", None, "--adapters", "agui")
    result = drive(server.url, "script", steps=[{"add": {"text": "20"}},
                                                {"add": {"text": "3"}},
                                                {"add": {"text": "2"}}])
    state: dict[str, Any] = {}
    for run, count in zip(result["runs"], (20, 3, 2), strict=True):
        assert_well_formed(run)
        expected = _grown(state, count)
        kinds = [kind for kind, _ in run["states"]]
        assert kinds[0] == "STATE_SNAPSHOT"
        assert [held for _, held in run["states"]] == expected
        if count < 20:
            assert kinds[1:] == ["STATE_DELTA"] * 3  # applied by @ag-ui/client itself
        assert run["warnings"] == []  # a patch it could not apply would warn here
        state = expected[-1]
    assert result["state"] == state
    assert result["errors"] == []


def test_a_follower_in_another_process_starts_from_a_snapshot_and_follows_the_deltas(
    start_server: Any, drive: Any, drivers: Drivers, gates: Any, tmp_path: Path
) -> None:
    storage = f"file:{tmp_path / 'store'}"
    owner = start_server("agui_flows:growing", storage, "--adapters", "agui")
    other = start_server("agui_flows:growing", storage, "--adapters", "agui")
    thread = uuid.uuid4().hex
    first = drive(owner.url, "script", threadId=thread, steps=[{"add": {"text": "20"}}])
    grown = first["state"]
    held = drivers.start(owner.url, threadId=thread, steps=[{"add": {"text": "hold:g"}}])
    gates.wait_entered("g")  # the first superstep committed; the second is held
    opened = tmp_path / "follower.started"
    follower = drivers.start(other.url, threadId=thread, steps=[{"started": str(opened)}])
    end = time.monotonic() + DEADLINE
    while not opened.exists():
        assert follower.poll() is None, "the follower ended before its stream opened"
        assert time.monotonic() < end, "the follower's stream never opened"
        time.sleep(0.005)
    gates.release("g")
    (ran,) = drivers.result(held)["runs"]
    (followed,) = drivers.result(follower)["runs"]
    expected = _grown(grown, 1)
    for run in (ran, followed):
        assert [kind for kind, _ in run["states"]] == ["STATE_SNAPSHOT"] + ["STATE_DELTA"] * 3
        assert [state for _, state in run["states"]] == expected
        assert run["warnings"] == []
    assert "STEP_STARTED" not in followed["events"]  # it read the commits, not the run
