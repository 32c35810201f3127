"""End to end: an agent's tools over Responses, the official ``openai`` client against
``python -m checkflow serve samples.support:workflow --adapters native,foundry``.

The support agent (offline, ``DeskModel``) looks an order up and asks to refund it: the refund
waits for approval as an ``mcp_approval_request`` named ``refund``, answered by an
``mcp_approval_response``. A function tool the request declares is the client's own: the model
calls it as a ``function_call``, answered by a ``function_call_output``. Every body and event
is checked against the three models (``foundry_client``). The refund ledger
(``CHECKFLOW_SUPPORT_LEDGER``) says how many times a refund ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from foundry_client import client, create, events, native, refused, retrieve, text, tree
from foundry_schema import assert_well_formed
from openai import OpenAI
from support_ledger import paid

SUPPORT = "samples.support:workflow"
REFUND = "Please refund order 1001"
CONFIRM: dict[str, Any] = {
    "type": "function", "name": "confirm_with_user", "description": "Ask the user a question.",
    "parameters": {"type": "object", "properties": {"question": {"type": "string"}},
                   "required": ["question"]}}
Start = Any  # the start_foundry fixture


def _support(start_foundry: Start) -> Any:
    return start_foundry(target=SUPPORT)


def _approval(call_id: str, approve: bool, reason: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "mcp_approval_response", "approval_request_id": call_id,
                            "approve": approve}
    return item if reason is None else {**item, "reason": reason}


def _output(call_id: str, output: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def _ask_refund(openai_client: OpenAI) -> tuple[dict[str, Any], dict[str, Any]]:
    paused = create(openai_client, input=REFUND)
    assert paused["status"] == "completed"
    (item,) = paused["output"]
    return paused, item


def test_a_refund_waits_for_approval_named_after_its_tool_and_runs_once_approved(
    start_foundry: Start, ledger: Path,
) -> None:
    server = _support(start_foundry)
    openai_client = client(server)
    paused, item = _ask_refund(openai_client)
    assert item["type"] == "mcp_approval_request" and item["name"] == "refund"
    assert item["server_label"] == "checkflow"
    assert json.loads(item["arguments"]) == {"order_id": "1001", "amount": 40.0}
    (pending,) = native(server, paused["conversation"]["id"])["pending_requests"]
    assert pending["request_id"] == item["id"]  # the model's call id, in every protocol
    assert paid(ledger) == []
    done = create(openai_client, previous_response_id=paused["id"],
                  input=[_approval(item["id"], True)])
    assert text(done) == "Refunded 40.00 on order 1001."
    assert [p["call_id"] for p in paid(ledger)] == [item["id"]]
    again = create(openai_client, previous_response_id=paused["id"],
                   input=[_approval(item["id"], True)])
    assert again == done  # a retry of the answer replays its response: nothing runs again
    assert len(paid(ledger)) == 1


def test_a_denial_with_a_reason_tells_the_model_and_refunds_nothing(
    start_foundry: Start, ledger: Path,
) -> None:
    openai_client = client(_support(start_foundry))
    paused, item = _ask_refund(openai_client)
    done = create(openai_client, previous_response_id=paused["id"],
                  input=[_approval(item["id"], False, "the kettle was fine")])
    assert text(done).startswith("I did not refund it.")
    assert "the kettle was fine" in text(done)
    assert paid(ledger) == []
    page = openai_client.responses.input_items.list(done["id"])
    assert page.data[0].to_dict()["reason"] == "the kettle was fine"


def test_bad_answers_are_400s_naming_what_is_wrong_and_commit_nothing(
    start_foundry: Start, ledger: Path, store_dir: Path,
) -> None:
    server = _support(start_foundry)
    openai_client = client(server)
    paused, item = _ask_refund(openai_client)
    conversation = paused["conversation"]["id"]
    state = native(server, conversation)
    before = tree(store_dir)
    create_ = openai_client.responses.create
    cases = [  # (the reply, what the message must name)
        ([_approval("call_nope", True)], ["call_nope", item["id"]]),
        ([_output(item["id"], "sure")], [item["id"], "ToolApproval"]),
        ([_output(item["id"], json.dumps({"approved": True, "arguments": {"amount": 5}}))],
         [item["id"], "order_id"]),  # an edit is validated again: order_id is missing
    ]
    for reply, names in cases:
        error = refused(lambda reply=reply: create_(previous_response_id=paused["id"],
                                                    input=reply), 400)
        assert error["param"] == "input", error
        assert error["code"] == "invalid_function_call_output", error
        for name in names:
            assert name in error["message"], error
        after = tree(store_dir)  # the engine refused them at the head: only the lease moved
        assert {k: v for k, v in after.items() if not k.startswith("sessions/")} == {
            k: v for k, v in before.items() if not k.startswith("sessions/")}
        assert native(server, conversation) == state
    assert paid(ledger) == []
    done = create(openai_client, previous_response_id=paused["id"],
                  input=[_approval(item["id"], True)])
    assert text(done) == "Refunded 40.00 on order 1001."  # nothing refused was committed


def test_an_approval_answered_after_a_restart_runs_the_refund_once(
    start_foundry: Start, ledger: Path,
) -> None:
    first = _support(start_foundry)
    paused, item = _ask_refund(client(first))
    first.stop()
    openai_client = client(_support(start_foundry))  # the same storage, a fresh process
    assert retrieve(openai_client, paused["id"]) == paused
    done = create(openai_client, previous_response_id=paused["id"],
                  input=[_approval(item["id"], True)])
    assert text(done) == "Refunded 40.00 on order 1001."
    assert [p["call_id"] for p in paid(ledger)] == [item["id"]]


def test_a_client_tool_is_called_as_a_function_call_and_its_output_answers_it(
    start_foundry: Start,
) -> None:
    first, second = _support(start_foundry), _support(start_foundry)
    openai_client = client(first)
    paused = create(openai_client, input="please call confirm_with_user", tools=[CONFIRM])
    assert paused["status"] == "completed"
    (call,) = paused["output"]
    assert call["type"] == "function_call" and call["name"] == "confirm_with_user"
    assert json.loads(call["arguments"]) == {"question": "please call confirm_with_user"}
    (pending,) = native(first, paused["conversation"]["id"])["pending_requests"]
    assert pending["request_id"] == call["call_id"]
    other = client(second)  # answered in another process on the same stores
    done = create(other, previous_response_id=paused["id"],
                  input=[_output(call["call_id"], "yes, go ahead")])
    assert text(done) == "Your confirm_with_user said: yes, go ahead"
    assert retrieve(openai_client, done["id"]) == done
    later = create(openai_client, previous_response_id=done["id"],
                   input="please call confirm_with_user")  # no tools sent: none offered
    assert [item["type"] for item in later["output"]] == ["message"]


def test_streamed_tool_pauses_show_their_items_and_the_answer_streams_its_text(
    start_foundry: Start,
) -> None:
    openai_client = client(_support(start_foundry))
    with openai_client.responses.stream(model="support", input=REFUND) as stream:
        asked = events(stream)
        approval = stream.get_final_response()
    assert_well_formed(asked)
    (item,) = approval.output
    assert item.type == "mcp_approval_request" and item.name == "refund"
    assert [e["type"] for e in asked if "item" in e] == [
        "response.output_item.added", "response.output_item.done"]
    assert retrieve(openai_client, approval.id) == asked[-1]["response"]
    answer: Any = [_approval(item.id, True)]
    with openai_client.responses.stream(model="support", input=answer,
                                        previous_response_id=approval.id) as stream:
        answered = events(stream)
    assert_well_formed(answered)
    deltas = "".join(e["delta"] for e in answered if e["type"] == "response.output_text.delta")
    assert deltas == "Refunded 40.00 on order 1001."
    tools: Any = [CONFIRM]
    with openai_client.responses.stream(model="support", input="please call confirm_with_user",
                                        tools=tools) as stream:
        called = events(stream)
        final = stream.get_final_response()
    assert_well_formed(called)
    (done,) = [e for e in called if e["type"] == "response.function_call_arguments.done"]
    (call,) = final.output
    assert call.type == "function_call" and done["name"] == call.name == "confirm_with_user"
    assert done["arguments"] == call.arguments
    result = create(openai_client, previous_response_id=final.id,
                    input=[_output(call.call_id, "fine")])
    assert text(result) == "Your confirm_with_user said: fine"


def test_a_malformed_function_tool_is_a_400_naming_it(
    start_foundry: Start, store_dir: Path,
) -> None:
    openai_client = client(_support(start_foundry))
    before = tree(store_dir)
    cases = [([{**CONFIRM, "name": "no spaces"}], "tools[0].name"),
             ([CONFIRM, CONFIRM], "tools[1].name"),
             ([{**CONFIRM, "parameters": "an object"}], "tools[0].parameters")]
    for tools, param in cases:
        error = refused(lambda tools=tools: openai_client.responses.create(
            input="please call confirm_with_user", tools=tools), 400)
        assert error["param"] == param, error
    assert tree(store_dir) == before  # refused before the host ran anything
