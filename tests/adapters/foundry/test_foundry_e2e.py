"""End to end: the official ``openai`` client against ``python -m checkflow serve ... --adapters
foundry`` (uvicorn on loopback, file storage), every body and event checked against
``openresponses-types``.

Runs that must overlap are held on marker-file gates (``foundry_flows``); nothing here sleeps
to make requests overlap.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from foundry_client import checked as _checked
from foundry_client import client as _client
from foundry_client import create as _create
from foundry_client import events as _events
from foundry_client import native as _native
from foundry_client import refused as _refused
from foundry_client import retrieve as _retrieve
from foundry_client import text as _text
from foundry_client import tree as _tree
from foundry_schema import (
    assert_well_formed,
    validate_deleted,
    validate_event,
    validate_input_items,
)
from openai import OpenAI

TARGET = "tests.adapters.foundry.foundry_flows:workflow"  # as the conftest serves it
BRANCH = {"checkflow.branch": "true"}  # the explicit branch from an earlier response
Start = Any  # the start_foundry fixture
Gates = Any  # the gates fixture


def _calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The pending requests a response lists: function calls, and approval requests (their
    ``id`` is the request id: shown here as ``call_id`` too)."""
    return [item if item["type"] == "function_call" else {**item, "call_id": item["id"]}
            for item in body["output"]
            if item["type"] in ("function_call", "mcp_approval_request")]


def _reply(call_id: str, output: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def _pause(client: OpenAI, topic: str = "cats", **params: Any) -> tuple[dict[str, Any], str]:
    body = _create(client, input=f"ask:{topic}", **params)
    assert body["status"] == "completed"
    (call,) = _calls(body)
    return body, call["call_id"]


def test_a_blocking_create_completes_with_its_output_text(start_foundry: Start) -> None:
    client = _client(start_foundry())
    body = _create(client, input="hello")
    assert body["status"] == "completed" and body["object"] == "response"
    assert client.responses.retrieve(body["id"]).output_text == "HELLO"
    assert _text(body) == "HELLO" and body["conversation"]["id"].startswith("conv_")


def test_a_stream_has_every_event_in_order_numbered_and_a_complete_final_response(
    start_foundry: Start,
) -> None:
    client = _client(start_foundry())
    with client.responses.stream(model="foundry-e2e", input="hello") as stream:
        events = _events(stream)
        final = stream.get_final_response()
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed"]
    assert_well_formed(events)
    assert final.output_text == "HELLO" and final.status == "completed"
    assert [item["id"] for item in _retrieve(client, final.id)["output"]] == [
        item.id for item in final.output]


def test_a_raw_stream_ends_with_the_response_as_stored(start_foundry: Start) -> None:
    client = _client(start_foundry())
    events = _events(client.responses.create(input="hello", stream=True))
    assert_well_formed(events)
    assert _retrieve(client, events[0]["response"]["id"]) == events[-1]["response"]


def test_a_yes_no_pause_is_an_approval_request_and_its_answer_completes_the_response(
    start_foundry: Start,
) -> None:
    client = _client(start_foundry())
    paused, call_id = _pause(client)
    (call,) = _calls(paused)
    assert call["type"] == "mcp_approval_request" and call["id"] == call_id
    assert call["name"] == "request_info" and call["server_label"] == "checkflow"
    arguments = json.loads(call["arguments"])
    assert arguments["request_id"] == call_id
    assert arguments["data"] == {"question": "publish cats?"}
    assert arguments["response_schema"] == {"type": "boolean"}
    done = _create(client, previous_response_id=paused["id"], input=[_reply(call_id, "true")])
    assert done["status"] == "completed" and _text(done) == "published: cats"
    assert done["conversation"] == paused["conversation"]
    assert done["previous_response_id"] == paused["id"]


def test_a_streamed_pause_names_its_function_in_the_arguments_done_event(
    start_foundry: Start,
) -> None:
    client = _client(start_foundry())
    with client.responses.stream(model="foundry-e2e", input="pair:dogs") as stream:
        events = _events(stream)
        final = stream.get_final_response()
    assert_well_formed(events)
    assert [item.type for item in final.output] == ["mcp_approval_request", "function_call"]
    (done,) = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    (call,) = [item for item in final.output if item.type == "function_call"]
    assert done["name"] == call.name == "request_info"
    assert done["arguments"] == call.arguments and done["item_id"] == call.id


def test_a_pause_survives_a_server_restart(start_foundry: Start) -> None:
    first = start_foundry()
    paused, call_id = _pause(_client(first))
    first.stop()
    client = _client(start_foundry())
    assert _retrieve(client, paused["id"]) == paused
    done = _create(client, previous_response_id=paused["id"], input=[_reply(call_id, "false")])
    assert _text(done) == "dropped: cats"


def test_a_second_server_process_continues_a_response(start_foundry: Start) -> None:
    first, second = start_foundry(), start_foundry()
    paused, call_id = _pause(_client(first))
    done = _create(_client(second), previous_response_id=paused["id"],
                   input=[_reply(call_id, "true")])
    assert _text(done) == "published: cats"
    assert _retrieve(_client(first), done["id"]) == done


def test_two_answers_to_one_response_are_two_branches_when_asked_and_leave_it_unchanged(
    start_foundry: Start,
) -> None:
    server = start_foundry()
    client = _client(server)
    paused, call_id = _pause(client)
    yes = _create(client, previous_response_id=paused["id"], input=[_reply(call_id, "true")])
    no = _create(client, previous_response_id=paused["id"], input=[_reply(call_id, "false")],
                 metadata=BRANCH)
    assert (_text(yes), _text(no)) == ("published: cats", "dropped: cats")
    assert no["metadata"] == BRANCH
    assert _retrieve(client, paused["id"]) == paused
    assert _retrieve(client, yes["id"]) == yes
    snapshots = _native(server, f"{paused['conversation']['id']}/snapshots")["snapshots"]
    children: dict[str | None, int] = {}
    for snapshot in snapshots:
        children[snapshot["parent_snapshot_id"]] = children.get(
            snapshot["parent_snapshot_id"], 0) + 1
    assert sorted(children.values())[-1] == 2  # one snapshot with two children: the pause
    tips = {s["snapshot_id"] for s in snapshots} - set(children)
    assert len(tips) == 2
    again = _create(client, previous_response_id=yes["id"], input="more",  # the older branch
                    metadata=BRANCH)
    assert _text(again) == "MORE"


def test_answering_one_of_two_calls_lists_the_other_again_with_its_call_id(
    start_foundry: Start,
) -> None:
    client = _client(start_foundry())
    paused = _create(client, input="pair:dogs")
    approve, note = (c["call_id"] for c in _calls(paused))
    assert json.loads(_calls(paused)[1]["arguments"])["response_schema"] == {"type": "string"}
    half = _create(client, previous_response_id=paused["id"], input=[_reply(approve, "true")])
    assert half["status"] == "completed"
    assert [c["call_id"] for c in _calls(half)] == [note]
    done = _create(client, previous_response_id=half["id"],
                   input=[_reply(note, [{"type": "input_text", "text": "42"}])])
    assert _text(done) == "published: dogs (42)"  # "42" is not a string as JSON: tried as text


def test_an_approval_response_answers_an_approval_request_yes_or_no(
    start_foundry: Start,
) -> None:
    client = _client(start_foundry())
    paused, call_id = _pause(client)
    with client.responses.stream(model="foundry-e2e", input="ask:owls") as stream:
        streamed = _events(stream)  # openai's own stream verifier accepts the approval item
    assert_well_formed(streamed)
    assert [e["type"] for e in streamed if "item" in e] == [
        "response.output_item.added", "response.output_item.done"]  # no argument deltas
    done = _create(client, previous_response_id=paused["id"], input=[
        {"type": "mcp_approval_response", "approval_request_id": call_id, "approve": True}])
    assert _text(done) == "published: cats"
    refused = _create(client, previous_response_id=paused["id"], metadata=BRANCH, input=[
        {"type": "mcp_approval_response", "approval_request_id": call_id, "approve": False,
         "reason": "not today"}])
    assert _text(refused) == "dropped: cats"
    items = client.responses.input_items.with_raw_response.list(refused["id"])
    page = items.http_response.json()
    validate_input_items(page)
    assert page["data"][0]["reason"] == "not today"


def test_conversation_turns_advance_one_head_and_a_concurrent_turn_gets_409(
    start_foundry: Start, gates: Gates,
) -> None:
    server = start_foundry()
    client = _client(server)
    first = _create(client, input="a", conversation="talk-1")
    second = _create(client, input="b", conversation="talk-1")
    assert first["conversation"] == second["conversation"] == {"id": "talk-1"}
    assert _native(server, "talk-1")["outputs"] == ["A", "B"]
    held: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: held.update(
        body=_create(client, input="hold:h", conversation="talk-1")))
    worker.start()
    try:
        gates.wait_entered("h")
        error = _refused(lambda: client.responses.create(input="c", conversation="talk-1"), 409)
        assert error["code"] == "conversation_busy"
    finally:
        gates.release("h")
        worker.join(60)
    assert held["body"]["status"] == "completed"
    snapshots = _native(server, "talk-1/snapshots")["snapshots"]
    parents = [s["parent_snapshot_id"] for s in snapshots]
    assert len(parents) == len(set(parents))  # linear: no snapshot has two children


def test_replies_sent_with_the_conversation_answer_its_head(start_foundry: Start) -> None:
    client = _client(start_foundry())
    paused, call_id = _pause(client, conversation="talk-2")
    assert paused["conversation"] == {"id": "talk-2"}
    done = _create(client, conversation="talk-2", input=[_reply(call_id, "true")])
    assert _text(done) == "published: cats" and done["conversation"] == {"id": "talk-2"}
    again = _create(client, conversation="talk-2", input=[_reply(call_id, "true")])
    assert again == done  # the same reply again is a retry: its response, replayed
    error = _refused(lambda: client.responses.create(
        conversation="talk-2", input=[_reply(call_id, "false")]), 409)
    assert error["code"] == "already_answered"
    assert call_id in error["message"] and done["id"] in error["message"]
    error = _refused(lambda: client.responses.create(
        conversation="talk-2", input=[_reply("call-never-asked", "true")]), 400)
    assert "call-never-asked" in error["message"]  # nothing of that id is pending


def test_retrieve_and_input_items_show_the_response_and_its_input(start_foundry: Start) -> None:
    client = _client(start_foundry())
    body = _create(client, input=[{"role": "user", "content": "hi"}], metadata={"k": "v"},
                   instructions="be brief")
    assert _retrieve(client, body["id"]) == body
    assert body["metadata"] == {"k": "v"} and body["instructions"] == "be brief"
    raw = client.responses.input_items.with_raw_response.list(body["id"])
    page = raw.http_response.json()
    validate_input_items(page)
    (item,) = page["data"]
    assert item["role"] == "user" and item["content"] == [{"type": "input_text", "text": "hi"}]
    assert page["first_id"] == page["last_id"] == item["id"] and not page["has_more"]


def test_input_items_are_paged_in_either_order(start_foundry: Start) -> None:
    client = _client(start_foundry())
    paused = _create(client, input="pair:x")
    calls = [c["call_id"] for c in _calls(paused)]
    done = _create(client, previous_response_id=paused["id"],
                   input=[_reply(calls[0], "true"), _reply(calls[1], "n")])
    listed = client.responses.input_items.list(done["id"], order="asc", limit=1)
    assert [i.call_id for i in listed.data] == [calls[0]] and listed.has_more
    rest = client.responses.input_items.list(done["id"], order="asc", after=listed.last_id)
    assert [i.call_id for i in rest.data] == [calls[1]] and not rest.has_more
    newest = client.responses.input_items.list(done["id"])  # desc by default
    assert [i.call_id for i in newest.data] == calls[::-1]


def test_a_deleted_response_is_gone(start_foundry: Start) -> None:
    client = _client(start_foundry())
    body = _create(client, input="x")
    deleted = client.responses.with_raw_response.delete(body["id"]).http_response.json()
    validate_deleted(deleted)
    assert deleted == {"id": body["id"], "object": "response", "deleted": True}  # OpenAI's
    assert _refused(lambda: client.responses.retrieve(body["id"]), 404)["code"] == \
        "response_not_found"
    _refused(lambda: client.responses.delete(body["id"]), 404)


def test_a_response_not_stored_cannot_be_retrieved_or_continued(start_foundry: Start) -> None:
    client = _client(start_foundry())
    paused = _create(client, input="ask:x", store=False)
    assert paused["store"] is False and _calls(paused)
    _refused(lambda: client.responses.retrieve(paused["id"]), 404)
    streamed = _events(client.responses.create(input="y", stream=True, store=False))
    assert_well_formed(streamed)
    assert _text(streamed[-1]["response"]) == "Y"
    _refused(lambda: client.responses.retrieve(streamed[0]["response"]["id"]), 404)
    call_id = _calls(paused)[0]["call_id"]
    error = _refused(lambda: client.responses.create(
        previous_response_id=paused["id"], input=[_reply(call_id, "true")]), 400)
    assert error["code"] == "previous_response_not_found"


def test_a_background_response_is_cancelled_and_keeps_the_last_good_head(
    start_foundry: Start, gates: Gates,
) -> None:
    server = start_foundry()
    client = _client(server)
    _create(client, input="a", conversation="bg-1")
    head = _native(server, "bg-1")["resume_token"]
    started = _create(client, input="hold:bg", conversation="bg-1", background=True)
    assert started["status"] == "in_progress" and started["background"] is True
    gates.wait_entered("bg")
    assert _retrieve(client, started["id"])["status"] == "in_progress"
    cancelled = _checked(client.responses.with_raw_response.cancel(started["id"]))
    assert cancelled["status"] == "cancelled"
    assert _retrieve(client, started["id"])["status"] == "cancelled"
    assert _native(server, "bg-1")["resume_token"] == head
    assert _text(_create(client, input="b", conversation="bg-1")) == "B"


def test_a_background_stream_is_replayed_after_starting_after_then_followed_live(
    start_foundry: Start, gates: Gates,
) -> None:
    client = _client(start_foundry())
    started = _create(client, input="steps:s", background=True)
    gates.wait_entered("s")
    replayed: list[dict[str, Any]] = []
    with client.responses.retrieve(started["id"], stream=True, starting_after=4) as stream:
        for event in stream:
            wire = event.to_dict(warnings=False)
            validate_event(wire)
            replayed.append(wire)
            if wire["type"] == "response.output_item.done" and not any(
                    e["type"] == "response.output_item.done" for e in replayed[:-1]):
                gates.release("s")  # "one" is out; let the run go on to "two"
    assert [e["sequence_number"] for e in replayed] == list(
        range(5, 5 + len(replayed)))
    assert replayed[-1]["type"] == "response.completed"
    whole = _events(client.responses.retrieve(started["id"], stream=True))
    assert_well_formed(whole)
    assert [e["sequence_number"] for e in whole] == list(range(len(whole)))  # from 0
    assert whole[5:] == replayed  # starting_after=4: the events numbered 5 on
    after_created = _events(client.responses.retrieve(started["id"], stream=True,
                                                      starting_after=0))
    assert after_created == whole[1:]  # starting_after=0 skips response.created alone
    assert _text(whole[-1]["response"]) == "onetwo"


def test_a_background_response_running_in_one_process_is_followed_from_another(
    start_foundry: Start, gates: Gates,
) -> None:
    first, second = start_foundry(), start_foundry()
    started = _create(_client(first), input="steps:x", background=True)
    gates.wait_entered("x")
    other = _client(second)
    assert _retrieve(other, started["id"])["status"] == "in_progress"
    followed: dict[str, Any] = {}
    reader = threading.Thread(target=lambda: followed.update(
        events=_events(other.responses.retrieve(started["id"], stream=True))))
    reader.start()
    gates.release("x")
    reader.join(60)
    assert_well_formed(followed["events"])
    assert _text(followed["events"][-1]["response"]) == "onetwo"
    assert _retrieve(other, started["id"])["status"] == "completed"


def test_a_background_stream_from_create_sees_every_event(start_foundry: Start) -> None:
    client = _client(start_foundry())
    events = _events(client.responses.create(input="hello", background=True, stream=True))
    assert_well_formed(events)
    assert _text(events[-1]["response"]) == "HELLO"
    assert events[-1]["response"]["background"] is True


def test_a_failed_run_is_a_failed_response_with_an_error(start_foundry: Start) -> None:
    server = start_foundry()
    client = _client(server)
    _create(client, input="a", conversation="f-1")
    head = _native(server, "f-1")["resume_token"]
    body = _create(client, input="fail", conversation="f-1")
    assert body["status"] == "failed"
    assert "failed on purpose" in body["error"]["message"]
    assert _native(server, "f-1")["resume_token"] == head  # the last committed snapshot
    with client.responses.stream(model="foundry-e2e", input="fail") as stream:
        events = [e.to_dict(warnings=False) for e in stream]
    assert_well_formed(events)
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["code"] == "server_error"


def test_each_rejection_is_openai_shaped_and_leaves_no_session_or_checkpoint(
    start_foundry: Start, store_dir: Path,
) -> None:
    server = start_foundry()
    client = _client(server)
    paused, call_id = _pause(client)
    done = _create(client, input="x")
    post = f"{server.url}/responses"
    before = _tree(store_dir)
    conversation = paused["conversation"]["id"]
    state = _native(server, conversation)
    create = client.responses.create
    # (request, status, param, code, a text the message must contain)
    cases: list[tuple[Callable[[], Any], int, str | None, str | None, str | None]] = [
        (lambda: _raise_for(httpx.post(post, content=b"{nope",
                                       headers={"content-type": "application/json"})),
         400, None, None, "JSON"),
        (lambda: _raise_for(httpx.post(post, json={"input": 5})), 400, "input", None, None),
        (lambda: create(input="x", previous_response_id="resp_nope"),
         400, "previous_response_id", "previous_response_not_found", "resp_nope"),
        (lambda: client.responses.retrieve("resp_nope"), 404, "response_id",
         "response_not_found", "resp_nope"),
        (lambda: client.responses.delete("resp_nope"), 404, "response_id",
         "response_not_found", None),
        (lambda: client.responses.cancel("resp_nope"), 404, "response_id",
         "response_not_found", None),
        (lambda: client.responses.cancel(done["id"]), 400, "response_id", None, "background"),
        (lambda: create(input="x", stream_options={"include_obfuscation": False}),
         400, "stream_options", None, None),
        (lambda: create(input="x", background=True, store=False), 400, "background", None,
         None),
        (lambda: create(input="x", conversation="c", previous_response_id=paused["id"]),
         400, "previous_response_id", None, "conversation"),
        (lambda: create(previous_response_id=done["id"], input=[_reply("call-nope", "true")]),
         400, "input", None, "call-nope"),
        (lambda: create(previous_response_id=paused["id"], input=[
            _reply(call_id, "true"), _reply(call_id, "false")]), 400, "input", None, call_id),
        (lambda: create(previous_response_id=paused["id"], input=[
            _reply(call_id, "true"), {"role": "user", "content": "also"}]),
         400, "input", None, call_id),
        (lambda: create(previous_response_id=paused["id"], input=[_reply(call_id, '{"a": 1}')]),
         400, "input", "invalid_function_call_output", call_id),
        (lambda: create(input=[{"type": "item_reference", "id": "i"}]),
         400, "input[0].type", None, "item_reference"),
        (lambda: create(input=[{"role": "user", "content": "a"},
                               {"role": "user", "content": "b"}]), 400, "input", None, None),
    ]
    for index, (call, status, param, code, names) in enumerate(cases):
        error = _refused(call, status)
        assert error["type"] == "invalid_request_error", (index, error)
        assert error["param"] == param, (index, error)
        if code is not None:
            assert error["code"] == code, (index, error)
        if names is not None:
            assert names in error["message"], (index, error)
        if index in _REACHES_THE_HOST:
            # the host took the conversation's lease and gave it back: the session was
            # rewritten, nothing was added and the checkpoint is untouched
            after = _tree(store_dir)
            assert sorted(after) == sorted(before), (index, error)
            assert {k: v for k, v in after.items() if not k.startswith("sessions/")} == {
                k: v for k, v in before.items() if not k.startswith("sessions/")}
            assert _native(server, conversation) == state
            before = after
        else:
            assert _tree(store_dir) == before, f"case {index} changed the storage: {error}"
    answered = _create(client, previous_response_id=paused["id"],
                       input=[_reply(call_id, "true")])
    assert _text(answered) == "published: cats"  # nothing the rejections sent was committed


_REACHES_THE_HOST = {10, 13}  # replies the engine refuses at the head: a call nothing left
# pending there (10), an output that fits the request neither as JSON nor as text (13)


def _raise_for(response: httpx.Response) -> None:
    if response.status_code >= 400:
        raise openai.APIStatusError(response.text, response=response, body=response.json())


def test_another_principal_does_not_see_a_response(start_foundry: Start) -> None:
    server = start_foundry("--authenticate", "e2e_flows:authenticate")
    alice, bob = _client(server, "alice"), _client(server, "bob")
    body = _create(alice, input="mine")
    assert _retrieve(alice, body["id"]) == body
    _refused(lambda: bob.responses.retrieve(body["id"]), 404)
    _refused(lambda: bob.responses.create(previous_response_id=body["id"], input="x"), 400)


def _cli_has_foundry() -> bool:
    found = subprocess.run([sys.executable, "-m", "checkflow", "serve", "--help"],
                           capture_output=True, text=True, check=False)
    return "--foundry" in found.stdout


@pytest.mark.skipif(not _cli_has_foundry(), reason="serve --foundry is not wired in the CLI")
def test_serve_foundry_answers_readiness_and_takes_the_user_header_as_principal(
    start_foundry: Start,
) -> None:
    server = start_foundry("--foundry", adapters="")
    server.url = server.url.replace("0.0.0.0", "127.0.0.1")
    ready = httpx.get(f"{server.url}/readiness", timeout=60)
    assert (ready.status_code, ready.json()) == (200, {"status": "healthy"})
    alice = _client(server, **{"x-agent-user-id": "alice", "x-agent-session-id": "sess-1"})
    body = _create(alice, input="hi")
    assert body["conversation"] == {"id": "sess-1"}
    assert _retrieve(alice, body["id"]) == body
    _refused(lambda: _client(server, **{"x-agent-user-id": "bob"}).responses.retrieve(
        body["id"]), 404)
    _refused(lambda: _client(server).responses.retrieve(body["id"]), 404)


@pytest.mark.skipif(not _cli_has_foundry(), reason="serve --foundry is not wired in the CLI")
def test_serve_foundry_listens_on_port_from_the_environment_on_all_interfaces(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:  # a port free a moment ago: the server takes it next
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PORT": str(port), "PYTHONPATH": str(repo)}
    process = subprocess.Popen(
        [sys.executable, "-m", "checkflow", "serve", TARGET, "--foundry",
         "--storage", f"file:{tmp_path / 'store'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=repo)
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert f" on http://0.0.0.0:{port} " in banner, banner
        ready = httpx.get(f"http://127.0.0.1:{port}/readiness", timeout=60)
        assert (ready.status_code, ready.json()) == (200, {"status": "healthy"})
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.skipif(not _cli_has_foundry(), reason="serve --foundry is not wired in the CLI")
def test_adapters_decide_what_is_mounted_native_included(start_foundry: Start) -> None:
    alone = start_foundry("--foundry", adapters="foundry")
    alone.url = alone.url.replace("0.0.0.0", "127.0.0.1")
    body = _create(_client(alone, **{"x-agent-user-id": "u"}), input="hi")
    assert _text(body) == "HI"
    for path in ("/v1/conversations/x", "/openapi.json"):  # no native API
        assert httpx.get(f"{alone.url}{path}", timeout=60).status_code == 404, path
    for path in ("/healthz", "/readyz", "/readiness"):  # the probes stay
        assert httpx.get(f"{alone.url}{path}", timeout=60).status_code == 200, path
    both = start_foundry("--foundry", adapters="native,foundry")
    both.url = both.url.replace("0.0.0.0", "127.0.0.1")
    assert httpx.get(f"{both.url}/openapi.json", timeout=60).status_code == 200
    _create(_client(both), input="hi", conversation="c-1")
    assert _native(both, "c-1")["outputs"] == ["HI"]
    native = start_foundry(adapters="native")
    assert httpx.post(f"{native.url}/responses", json={"input": "hi"},
                      timeout=60).status_code == 404  # and no Responses routes without it
