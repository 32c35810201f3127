"""One hosted turn across processes (issue 27), on the native API of two ``serve`` processes
sharing one store (``file:``, and ``cosmos:`` on the emulator): a second server follows a
turn the first runs, names it to a retry of the same ``Idempotency-Key``, replays it once
committed, cancels it within about a second, and settles it at once when its owner was
SIGKILLed. Runs are held on marker-file gates; nothing sleeps for an overlap."""

from __future__ import annotations

import json
import signal
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

Start = Any  # the start_server fixture's callable
DEADLINE = 60.0


@pytest.fixture(params=["file", "cosmos"])
def storage(request: pytest.FixtureRequest) -> str | None:
    if request.param == "cosmos":
        request.getfixturevalue("cosmos_env")
        return "cosmos:"
    return None  # the fixture's file: folder


@pytest.fixture
def cosmos_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    emulator = request.getfixturevalue("cosmos_emulator")
    monkeypatch.setenv("CHECKFLOW_COSMOS_ENDPOINT", emulator.endpoint)
    monkeypatch.setenv("CHECKFLOW_COSMOS_KEY", emulator.key)
    monkeypatch.setenv("CHECKFLOW_COSMOS_DATABASE", f"db-{uuid.uuid4().hex}")


@pytest.fixture
def base(start_server: Start) -> str:
    """A conversation path of its own (one Cosmos DB container serves every test)."""
    return f"/v1/conversations/turn-{uuid.uuid4().hex}"


def sse(response: httpx.Response) -> Iterator[tuple[str, Any]]:
    """``(event, data)`` of each server-sent event, as they arrive."""
    event, data = "message", ""
    for line in response.iter_lines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line and data:
            yield event, json.loads(data)
            event, data = "message", ""


class Background:
    """One blocking request in a thread of its own (the owner's turn, held on a gate)."""

    def __init__(self, method: str, url: str, **kwargs: Any) -> None:
        self.response: httpx.Response | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._send, args=(method, url), kwargs=kwargs,
                                        daemon=True)
        self._thread.start()

    def _send(self, method: str, url: str, **kwargs: Any) -> None:
        try:
            self.response = httpx.request(method, url, timeout=DEADLINE, **kwargs)
        except BaseException as exc:  # a killed server: the test reads it
            self.error = exc

    def result(self) -> httpx.Response:
        self._thread.join(DEADLINE)
        assert self.response is not None, self.error
        return self.response


def test_a_second_server_follows_names_and_replays_a_turn(
        start_server: Start, gates: Any, storage: str | None,
        base: str) -> None:
    owner, other = start_server(storage=storage), start_server(storage=storage)
    key = {"Idempotency-Key": "turn-1"}
    held = Background("POST", f"{owner.url}{base}/runs",
                      json={"message": "hold:a"}, headers=key)
    gates.wait_entered("a")
    with httpx.stream("GET", f"{other.url}{base}/events",
                      timeout=DEADLINE) as followed:
        events = sse(followed)
        kind, first = next(events)
        assert kind == "SnapshotCommittedEvent" and first["boundary"] == "input_accepted"
        retry = httpx.post(f"{other.url}{base}/runs",
                           json={"message": "hold:a"}, headers=key, timeout=DEADLINE)
        assert retry.status_code == 409, retry.text
        assert retry.json()["error"]["code"] == "turn_in_progress"
        assert retry.headers["retry-after"]
        gates.release("a")
        rest = list(events)
    assert [data["data"] for kind, data in rest if kind == "OutputEvent"] == ["HOLD:A"]
    assert rest[-1][0] == "WorkflowStatusEvent" and rest[-1][1]["status"] == "idle"
    done = held.result()
    assert done.status_code == 200 and done.json()["outputs"] == ["HOLD:A"]
    again = httpx.post(f"{other.url}{base}/runs", json={"message": "hold:a"},
                       headers=key, timeout=DEADLINE)
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert again.json()["outputs"] == ["HOLD:A"]
    assert len(list(gates.folder.glob("a.entered"))) == 1


def test_a_cancel_from_another_server_stops_the_turn_within_the_poll(
        start_server: Start, gates: Any, storage: str | None,
        base: str) -> None:
    owner, other = start_server(storage=storage), start_server(storage=storage)
    first = httpx.post(f"{owner.url}{base}/runs", json={"message": "one"},
                       timeout=DEADLINE).json()
    held = Background("POST", f"{owner.url}{base}/runs",
                      json={"message": "hold:b"})
    gates.wait_entered("b")
    cancel = httpx.post(f"{other.url}{base}/cancel", timeout=DEADLINE)
    assert cancel.json()["cancelled"] is True
    stopped = held.result()  # the lease renews every 100 s: only the 1 s poll ends it here
    assert stopped.json()["status"] == "cancelled"
    state = httpx.get(f"{other.url}{base}", timeout=DEADLINE).json()
    assert state["resume_token"] == first["resume_token"]
    gates.release("b")


def test_a_turn_whose_owner_was_killed_is_settled_at_once(
        start_server: Start, gates: Any, storage: str | None,
        base: str) -> None:
    owner, other = start_server(storage=storage), start_server(storage=storage)
    key = {"Idempotency-Key": "killed"}
    held = Background("POST", f"{owner.url}{base}/runs",
                      json={"message": "hold:c"}, headers=key)
    gates.wait_entered("c")
    owner.process.send_signal(signal.SIGKILL)
    owner.process.wait(DEADLINE)
    with pytest.raises(AssertionError):
        held.result()  # the client saw the connection drop, no answer
    with httpx.stream("GET", f"{other.url}{base}/events",
                      timeout=DEADLINE) as followed:
        told = list(sse(followed))
    assert told == []  # nothing runs there any more: a follower ends at once
    gates.release("c")
    retried = httpx.post(f"{other.url}{base}/runs", json={"message": "hold:c"},
                         headers=key, timeout=DEADLINE)
    assert retried.status_code == 200, retried.text  # the dead turn is not replayed: it runs
    assert retried.json()["outputs"] == ["HOLD:C"] and "replayed" not in retried.json()


def test_on_sigterm_a_running_stream_ends_with_its_cancelled_result(
        start_server: Start, gates: Any, base: str) -> None:
    server = start_server("e2e_flows:workflow", None, "--shutdown-timeout", "2")
    first = httpx.post(f"{server.url}{base}/runs", json={"message": "one"},
                       timeout=DEADLINE).json()
    with httpx.stream("POST", f"{server.url}{base}/runs?stream=true",
                      json={"message": "hold:d"}, timeout=DEADLINE) as streamed:
        events = sse(streamed)
        assert next(events)[0] == "WorkflowStartedEvent"
        gates.wait_entered("d")
        server.process.send_signal(signal.SIGTERM)
        rest = list(events)  # never released: the shutdown stops the turn
    assert rest[-1][0] == "result" and rest[-1][1]["status"] == "cancelled"
    assert server.process.wait(DEADLINE) in (0, -signal.SIGTERM)  # uvicorn re-raises it
    again = start_server()
    state = httpx.get(f"{again.url}{base}", timeout=DEADLINE).json()
    assert state["resume_token"] == first["resume_token"]
