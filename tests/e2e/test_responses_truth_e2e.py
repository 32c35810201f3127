"""Issue 27 on the Responses protocol: one turn, one truth, exactly once, from anywhere.

The official ``openai`` client against ``python -m checkflow serve ... --adapters foundry`` on
loopback (file storage), with a second process or a restart where a point needs one. Runs are
held on marker-file gates (``responses_truth_flows``) and counted with counter files; kills
follow a gate's marker, never a sleep. Every body and event is checked against the Responses
schema.

The ``openai`` client (3.x) makes an idempotency key for every call and reuses it on its
retries, but sends it in no header (its ``_idempotency_header`` is ``None``): a retry of a
new message is only recognised when the caller sends ``Idempotency-Key`` itself
(``extra_headers``). A reply needs nothing: ``previous_response_id`` and the
``function_call_output`` call id are its key.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from openai import DefaultHttpxClient, OpenAI

from checkflow.adapters.foundry._ids import response_id
from tests.adapters.foundry.foundry_client import checked, create, refused, retrieve, text
from tests.adapters.foundry.foundry_schema import (
    assert_well_formed,
    validate_event,
)

TARGET = "responses_truth_flows:workflow"
BRANCH = {"checkflow.branch": "true"}  # the explicit branch: a metadata key (docs)
TERMINAL = {"response.completed", "response.failed", "response.incomplete"}
CLIENT_TIMEOUT = 5.0  # the retrying client's timeout: a held run outlasts it
Start = Any  # the start_server fixture's callable
Gates = Any  # the gates fixture


def _serve(start_server: Start, *extra: str) -> Any:
    return start_server(TARGET, None, "--adapters", "native,foundry", *extra)


def _client(server: Any, **options: Any) -> OpenAI:
    return OpenAI(base_url=server.url, api_key="unused", **{"max_retries": 0, "timeout": 60,
                                                            **options})


class Attempts:
    """Every ``POST /responses`` a client sends, with its headers, and what came back;
    ``on_retry`` runs when the first retry is about to be sent."""

    def __init__(self, on_retry: Callable[[], None] = lambda: None) -> None:
        self.sent: list[httpx.Headers | Any] = []
        self.answered: list[int] = []
        self._on_retry = on_retry

    def _request(self, request: Any) -> None:
        if request.method == "POST" and request.url.path.endswith("/responses"):
            self.sent.append(request.headers)
            if len(self.sent) == 2:
                self._on_retry()

    def _response(self, response: Any) -> None:
        if response.request.method == "POST" and response.request.url.path.endswith(
                "/responses"):
            self.answered.append(response.status_code)

    def client(self, server: Any) -> OpenAI:
        """A client with the ``openai`` defaults (2 retries) and a short timeout."""
        http = DefaultHttpxClient(event_hooks={"request": [self._request],
                                               "response": [self._response]})
        return OpenAI(base_url=server.url, api_key="unused", timeout=CLIENT_TIMEOUT,
                      http_client=http)


def _call_id(body: dict[str, Any]) -> str:
    """The one pending request's id: a yes/no question is an ``mcp_approval_request`` (its
    ``id``), answered here with a ``function_call_output`` all the same."""
    (call,) = [item for item in body["output"]
               if item["type"] in ("function_call", "mcp_approval_request")]
    return str(call.get("call_id") or call["id"])


def _reply(call_id: str, output: str) -> list[dict[str, Any]]:
    return [{"type": "function_call_output", "call_id": call_id, "output": output}]


def _runs(gates: Gates, name: str) -> int:
    counter = Path(gates.folder) / f"{name}.runs"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def _native(server: Any, conversation: str, path: str = "") -> Any:
    response = httpx.get(f"{server.url}/v1/conversations/{conversation}{path}", timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def _children(server: Any, conversation: str, snapshot_id: str) -> list[str]:
    snapshots = _native(server, conversation, "/snapshots")["snapshots"]
    return [s["snapshot_id"] for s in snapshots if s["parent_snapshot_id"] == snapshot_id]


def _events(stream: Iterator[Any]) -> list[dict[str, Any]]:
    events = []
    for event in stream:
        wire = event.to_dict(warnings=False)
        validate_event(wire)
        events.append(wire)
    return events


def _wait_for(path: Path, seconds: float) -> float:
    """Seconds until ``path`` exists (a bounded poll); ``TimeoutError`` after ``seconds``."""
    start = time.monotonic()
    while not path.exists():
        if time.monotonic() - start > seconds:
            raise TimeoutError(f"{path.name} did not appear within {seconds} s")
        time.sleep(0.01)
    return time.monotonic() - start


# -- exactly once: a retry of a turn that outlasted the client's timeout ---------------------


def test_the_openai_client_sends_no_idempotency_key_of_its_own(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server)
    attempts = Attempts()
    attempts.client(server).responses.create(input="plain")
    assert [h.get("idempotency-key") for h in attempts.sent] == [None]
    attempts.client(server).responses.create(input="plain",
                                             extra_headers={"Idempotency-Key": "k-1"})
    assert attempts.sent[-1].get("idempotency-key") == "k-1"


def test_a_reply_that_outlasts_the_client_timeout_runs_once_through_its_retries(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server)
    client = _client(server)
    paused = create(client, input="ask:r")
    call_id = _call_id(paused)
    head = _native(server, paused["conversation"]["id"])["resume_token"]["snapshot_id"]

    def retry_started() -> None:
        assert (Path(gates.folder) / "r.entered").exists()  # the first attempt is running
        gates.release("r")

    attempts = Attempts(retry_started)
    done = attempts.client(server).responses.create(previous_response_id=paused["id"],
                                                    input=_reply(call_id, "true"))
    assert len(attempts.sent) >= 2 and attempts.answered[-1] == 200  # it was retried
    assert len(attempts.answered) == len(attempts.sent) - 1  # the first attempt timed out
    assert [h.get("x-stainless-retry-count") for h in attempts.sent][:2] == ["0", "1"]
    assert done.output_text == "published: r"
    assert _runs(gates, "r") == 1  # the answer ran once
    assert len(_children(server, paused["conversation"]["id"], head)) == 1  # no fork
    assert retrieve(client, done.id)["status"] == "completed"
    again = create(client, previous_response_id=paused["id"], input=_reply(call_id, "true"))
    assert again["id"] == done.id and _runs(gates, "r") == 1  # a later retry: replayed


def test_a_message_with_an_idempotency_key_runs_once_through_the_client_retries(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server)
    key = {"Idempotency-Key": "order-7"}

    def retry_started() -> None:
        assert (Path(gates.folder) / "i.entered").exists()
        gates.release("i")

    attempts = Attempts(retry_started)
    done = attempts.client(server).responses.create(input="hold:i", conversation="idem",
                                                    extra_headers=key)
    assert len(attempts.sent) >= 2 and attempts.answered[-1] == 200
    assert {h.get("idempotency-key") for h in attempts.sent} == {"order-7"}
    assert done.output_text == "HOLD:I" and _runs(gates, "i") == 1
    client = _client(server)
    again = create(client, input="hold:i", conversation="idem", extra_headers=key)
    assert again["id"] == done.id and text(again) == "HOLD:I"
    assert _native(server, "idem")["outputs"] == ["HOLD:I"] and _runs(gates, "i") == 1
    other = create(client, input="hold:i", conversation="idem",
                    extra_headers={"Idempotency-Key": "order-8"})
    assert other["id"] != done.id and _runs(gates, "i") == 2  # another key: another turn


def test_a_streamed_retry_of_a_running_turn_follows_it_to_the_same_response(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server)
    client = _client(server)
    key = {"Idempotency-Key": "stream-1"}
    streams: dict[str, list[dict[str, Any]]] = {}
    attached = threading.Event()

    def read(name: str) -> None:
        events = streams.setdefault(name, [])
        for event in client.responses.create(input="hold:s", conversation="again",
                                             stream=True, extra_headers=key):
            events.append(event.to_dict(warnings=False))
            if name == "retry":
                attached.set()  # its response.created: the retry follows the running turn

    first = threading.Thread(target=read, args=("first",))
    first.start()
    gates.wait_entered("s")
    retry = threading.Thread(target=read, args=("retry",))
    retry.start()
    try:
        assert attached.wait(60), "the retry got no event while the turn ran"
    finally:
        gates.release("s")
        first.join(60)
        retry.join(60)
    for name in ("first", "retry"):
        assert_well_formed(streams[name])
        assert streams[name][-1]["type"] == "response.completed", name
    assert streams["retry"][0]["response"]["id"] == streams["first"][0]["response"]["id"]
    assert text(streams["retry"][-1]["response"]) == "HOLD:S" and _runs(gates, "s") == 1


# -- a late reply is refused; a branch is asked for ------------------------------------------


def test_a_late_reply_to_an_answered_pause_is_refused_and_a_branch_must_be_asked_for(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server)
    gates.release("l")
    client = _client(server)
    paused = create(client, input="ask:l")
    call_id, conversation = _call_id(paused), paused["conversation"]["id"]
    pause = _native(server, conversation)["resume_token"]["snapshot_id"]
    first = create(client, previous_response_id=paused["id"], input=_reply(call_id, "true"))
    assert text(first) == "published: l"
    head = _native(server, conversation)["resume_token"]
    attempts = Attempts()
    late = attempts.client(server)  # the default retries: a refusal must be final
    error = refused(lambda: late.responses.create(previous_response_id=paused["id"],
                                                   input=_reply(call_id, "false")), 409)
    assert len(attempts.sent) == 1, "the client retried a final refusal"
    assert error["code"] == "already_answered" and error["param"] == "input"
    assert error["type"] == "invalid_request_error"
    assert call_id in error["message"] and first["id"] in error["message"]
    assert _native(server, conversation)["resume_token"] == head  # the head did not move
    assert _runs(gates, "l") == 1
    assert retrieve(client, first["id"]) == first
    assert len(_children(server, conversation, pause)) == 1
    branch = create(client, previous_response_id=paused["id"], input=_reply(call_id, "false"),
                     metadata=BRANCH)
    assert text(branch) == "dropped: l" and _runs(gates, "l") == 2
    assert branch["conversation"]["id"] == conversation
    assert len(_children(server, conversation, pause)) == 2  # the pause has two lines now
    assert retrieve(client, first["id"]) == first  # the other line is still retrievable


def test_another_reply_while_the_first_answer_still_runs_isrefused(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server)
    client = _client(server)
    paused = create(client, input="ask:w")
    call_id = _call_id(paused)
    answered: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: answered.update(body=create(
        client, previous_response_id=paused["id"], input=_reply(call_id, "true"))))
    worker.start()
    try:
        gates.wait_entered("w")  # the first answer runs, held
        error = refused(lambda: client.responses.create(
            previous_response_id=paused["id"], input=_reply(call_id, "false")), 409)
    finally:
        gates.release("w")
        worker.join(60)
    assert error["code"] == "already_answered" and call_id in error["message"]
    assert text(answered["body"]) == "published: w" and _runs(gates, "w") == 1
    assert answered["body"]["id"] in error["message"]  # the response answering it


def test_a_reply_refused_at_the_head_says_why(start_server: Start, gates: Gates) -> None:
    server = _serve(start_server)
    gates.release("v")
    client = _client(server)
    paused = create(client, input="ask:v", conversation="why")
    call_id = _call_id(paused)
    done = create(client, conversation="why", input=_reply(call_id, "true"))  # another key
    late = refused(lambda: client.responses.create(previous_response_id=paused["id"],
                                                    input=_reply(call_id, "true")), 409)
    assert late["code"] == "already_answered" and done["id"] in late["message"]
    unknown = response_id("why", "0" * 32)  # well formed, but no such turn
    error = refused(lambda: client.responses.create(previous_response_id=unknown,
                                                     input=_reply("never-asked", "true")), 400)
    assert error["code"] == "previous_response_not_found" and unknown in error["message"]
    error = refused(lambda: client.responses.create(previous_response_id=done["id"],
                                                     input=_reply("never-asked", "true")), 400)
    assert error["code"] == "invalid_function_call_output" and "never-asked" in error["message"]
    assert _runs(gates, "v") == 1


def test_a_pause_answered_over_the_native_api_is_answered_for_responses_too(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server)
    gates.release("n")
    client = _client(server)
    paused = create(client, input="ask:n")
    call_id, conversation = _call_id(paused), paused["conversation"]["id"]
    native = httpx.post(f"{server.url}/v1/conversations/{conversation}/runs",
                        json={"responses": {call_id: False}}, timeout=60)
    assert native.status_code == 200 and native.json()["outputs"] == ["dropped: n"]
    head = _native(server, conversation)["resume_token"]
    error = refused(lambda: client.responses.create(previous_response_id=paused["id"],
                                                     input=_reply(call_id, "true")), 409)
    assert error["code"] == "already_answered" and call_id in error["message"]
    assert _native(server, conversation)["resume_token"] == head and _runs(gates, "n") == 1
    assert retrieve(client, paused["id"]) == paused  # the pause is still what it was


def test_a_message_after_a_response_still_running_isrefused(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server)
    client = _client(server)
    started = create(client, input="hold:q", background=True)
    gates.wait_entered("q")
    try:
        error = refused(lambda: client.responses.create(previous_response_id=started["id"],
                                                         input="next"), 400)
    finally:
        gates.release("q")
    assert error["code"] == "previous_response_in_progress"
    assert error["param"] == "previous_response_id"


def test_a_message_continuing_a_response_that_is_no_longer_the_latest_needs_a_branch(
    start_server: Start,
) -> None:
    server = _serve(start_server)
    client = _client(server)
    first = create(client, input="one")
    conversation = first["conversation"]["id"]
    ended = _native(server, conversation)["resume_token"]["snapshot_id"]
    second = create(client, previous_response_id=first["id"], input="two")
    assert text(second) == "TWO" and second["conversation"]["id"] == conversation
    head = _native(server, conversation)["resume_token"]
    attempts = Attempts()
    error = refused(lambda: attempts.client(server).responses.create(
        previous_response_id=first["id"], input="three"), 409)
    assert len(attempts.sent) == 1, "the client retried a final refusal"
    assert error["code"] == "previous_response_not_latest"
    assert error["param"] == "previous_response_id" and first["id"] in error["message"]
    assert _native(server, conversation)["resume_token"] == head
    assert len(_children(server, conversation, ended)) == 1
    branch = create(client, previous_response_id=first["id"], input="three", metadata=BRANCH)
    assert text(branch) == "THREE" and branch["conversation"]["id"] == conversation
    assert len(_children(server, conversation, ended)) == 2


def test_an_idempotency_key_reused_with_another_input_isrefused(start_server: Start) -> None:
    server = _serve(start_server)
    client = _client(server)
    key = {"Idempotency-Key": "once"}
    first = create(client, input="a", extra_headers=key)
    assert create(client, input="a", extra_headers=key) == first  # no conversation named:
    conversation = first["conversation"]["id"]  # the key's own, the same for the retry
    error = refused(lambda: client.responses.create(input="b", extra_headers=key), 409)
    assert error["code"] == "idempotency_key_reused" and first["id"] in error["message"]
    assert _native(server, conversation)["outputs"] == ["A"]


def test_a_deleted_response_is_gone_but_its_turn_stays_in_the_conversation(
    start_server: Start,
) -> None:
    server = _serve(start_server)
    client = _client(server)
    body = create(client, input="x")
    client.responses.delete(body["id"])
    assert refused(lambda: client.responses.retrieve(body["id"]), 404)["code"] == \
        "response_not_found"
    error = refused(lambda: client.responses.create(previous_response_id=body["id"],
                                                     input="y"), 400)
    assert error["code"] == "previous_response_not_found"
    assert refused(lambda: client.responses.delete(body["id"]), 404)["code"] == \
        "response_not_found"
    assert _native(server, body["conversation"]["id"])["outputs"] == ["X"]


# -- no zombie turns: a killed owner ---------------------------------------------------------


def test_a_killed_background_response_is_failed_after_a_restart_and_its_stream_ends(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server)
    client = _client(server)
    create(client, input="a", conversation="zombie")
    started = create(client, input="hold:k", conversation="zombie", background=True)
    assert started["status"] == "in_progress"
    gates.wait_entered("k")
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(30)
    restarted = _serve(start_server)
    client = _client(restarted, timeout=15)  # a stream that waits on the dead owner fails
    for moment in ("after the restart", "after a new turn"):
        body = retrieve(client, started["id"])
        assert body["status"] in ("failed", "incomplete"), (moment, body)
        assert body["error"] is not None and "stopped" in body["error"]["message"], moment
        began = time.monotonic()
        events = _events(client.responses.retrieve(started["id"], stream=True))
        assert time.monotonic() - began < 10, moment  # at once, not after a deadline
        assert_well_formed(events)
        assert events[-1]["response"]["status"] == body["status"], moment
        if moment == "after the restart":
            assert text(create(client, input="b", conversation="zombie")) == "B"
    assert _native(restarted, "zombie")["outputs"] == ["A", "B"]
    assert _runs(gates, "k") == 1


# -- follow and cancel from another process --------------------------------------------------


def test_a_second_process_follows_a_running_response_superstep_by_superstep(
    start_server: Start, gates: Gates,
) -> None:
    owner, other = _serve(start_server), _serve(start_server)
    started = create(_client(owner), input="steps:f", background=True)
    gates.wait_entered("f")  # "one" is committed; the next superstep is held
    released_by: list[str] = []

    def release(why: str) -> None:
        if not released_by:
            released_by.append(why)
            gates.release("f")

    fallback = threading.Timer(30, release, args=("the fallback timer",))
    fallback.start()
    events: list[dict[str, Any]] = []
    try:
        with _client(other).responses.retrieve(started["id"], stream=True) as stream:
            for event in stream:
                wire = event.to_dict(warnings=False)
                validate_event(wire)
                events.append(wire)
                if wire["type"] == "response.output_item.done":
                    release("the follower seeing 'one'")
    finally:
        fallback.cancel()
        release("the end of the test")
    assert released_by == ["the follower seeing 'one'"]  # it saw "one" while the run held
    assert_well_formed(events)
    assert events[-1]["type"] == "response.completed" and text(events[-1]["response"]) == \
        "onetwo"
    assert retrieve(_client(owner), started["id"]) == events[-1]["response"]


def test_a_cancel_from_another_process_stops_the_run_within_about_a_second(
    start_server: Start, gates: Gates,
) -> None:
    owner, other = _serve(start_server), _serve(start_server)
    create(_client(owner), input="a", conversation="cancel-me")
    head = _native(owner, "cancel-me")["resume_token"]
    started = create(_client(owner), input="hold:c", conversation="cancel-me", background=True)
    gates.wait_entered("c")
    began = time.monotonic()
    cancelled = checked(_client(other).responses.with_raw_response.cancel(started["id"]))
    assert cancelled["status"] == "cancelled"
    _wait_for(Path(gates.folder) / "c.cancelled", 20)
    stopped = time.monotonic() - began
    assert stopped < 5, f"the owner stopped the run {stopped:.1f} s after the cancel"  # poll: 1 s
    gates.release("c")
    assert retrieve(_client(owner), started["id"])["status"] == "cancelled"
    assert _native(owner, "cancel-me")["resume_token"] == head
    after = create(_client(owner), input="b", conversation="cancel-me")
    assert text(after) == "B" and _native(other, "cancel-me")["outputs"] == ["A", "B"]


# -- graceful shutdown ---------------------------------------------------------------------


def test_on_sigterm_a_running_stream_ends_with_a_terminal_event(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server, "--shutdown-timeout", "2")
    client = _client(server)
    create(client, input="a", conversation="term")
    events: list[dict[str, Any]] = []
    broke: list[BaseException] = []

    def read() -> None:
        try:
            for event in client.responses.create(input="hold:t", conversation="term",
                                                 stream=True):
                events.append(event.to_dict(warnings=False))
        except Exception as exc:  # a stream cut off mid-way
            broke.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    gates.wait_entered("t")
    began = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    reader.join(60)
    ended = time.monotonic() - began
    server.process.wait(60)
    assert not reader.is_alive()
    assert not broke, broke
    assert events and events[-1]["type"] in TERMINAL, [e["type"] for e in events]
    assert ended < 2 + 5, f"the stream ended {ended:.1f} s after SIGTERM"
    assert_well_formed(events)
    response_id = events[0]["response"]["id"]
    restarted = _serve(start_server)
    body = retrieve(_client(restarted), response_id)
    assert body["status"] == events[-1]["response"]["status"] != "in_progress"
    assert _native(restarted, "term")["outputs"] == ["A"]  # the last good head


# -- the checkpoint is the truth: native actions -----------------------------------------------


def test_a_native_delete_of_the_conversation_leaves_no_response_behind(
    start_server: Start,
) -> None:
    server = _serve(start_server)
    client = _client(server)
    body = create(client, input="x", conversation="gone")
    assert httpx.delete(f"{server.url}/v1/conversations/gone", timeout=60).status_code == 204
    assert refused(lambda: client.responses.retrieve(body["id"]), 404)["code"] == \
        "response_not_found"
    fresh = create(client, input="y", conversation="gone")  # the conversation starts afresh
    assert text(fresh) == "Y" and _native(server, "gone")["outputs"] == ["Y"]


def test_a_native_cancel_of_a_background_response_is_its_cancel(
    start_server: Start, gates: Gates,
) -> None:
    server = _serve(start_server)
    client = _client(server)
    create(client, input="a", conversation="stopped")
    started = create(client, input="hold:n", conversation="stopped", background=True)
    gates.wait_entered("n")
    cancel = httpx.post(f"{server.url}/v1/conversations/stopped/cancel", timeout=60)
    assert cancel.json()["cancelled"] is True
    deadline = time.monotonic() + 60
    while (body := retrieve(client, started["id"]))["status"] == "in_progress":
        assert time.monotonic() < deadline, body
        time.sleep(0.05)  # polling a state change, not waiting for an overlap
    assert body["status"] == "cancelled"
    assert _native(server, "stopped")["outputs"] == ["A"]
    gates.release("n")
