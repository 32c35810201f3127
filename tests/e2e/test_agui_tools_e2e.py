"""Tools over AG-UI end to end: the official ``@ag-ui/client`` against ``serve`` of the support
sample (``samples.support:workflow``, its offline ``DeskModel``).

A refund needs a person's approval: the run streams the calls (``TOOL_CALL_*``, the lookup's
``TOOL_CALL_RESULT``) and ends with an interrupt of reason ``tool_call`` whose ``toolCallId``
is the refund's call; ``resume[]`` answers it with a ``ToolApproval``. A tool the client
declares (``RunAgentInput.tools``) pauses the same way and is answered the AG-UI way, with a
``tool`` message. The ledger (``CHECKFLOW_SUPPORT_LEDGER``) counts the refunds paid.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support_ledger import paid

from tests.e2e.test_agui_e2e import assert_well_formed, drive, native

__all__ = ["drive"]  # the fixture, shared with the other AG-UI client tests

TARGET = "samples.support:workflow"
ASK = {"add": {"text": "Please refund order 1001"}}
CONFIRM = {"name": "confirm_with_user", "description": "Ask the user to confirm something.",
           "parameters": {"type": "object", "properties": {"question": {"type": "string"}},
                          "required": ["question"]}}
ASK_CLIENT = {"add": {"text": "please call confirm_with_user"}, "tools": [CONFIRM]}


def paid_calls(ledger: Path) -> list[str]:
    """The call ids of the refunds paid (the ``ledger`` fixture: ``support_ledger``)."""
    return [entry["call_id"] for entry in paid(ledger)]


def serve(start_server: Any, storage: str | None = None) -> Any:
    return start_server(TARGET, storage, "--adapters", "native,agui")


def resume(payload: Any) -> dict[str, Any]:
    return {"resume": "pending", "answers": [{"status": "resolved", "payload": payload}]}


def texts(result: dict[str, Any], role: str = "assistant") -> list[str]:
    """The client's messages' text of ``role`` (an assistant's tool calls have none)."""
    return [m["content"] for m in result["messages"] if m["role"] == role and m.get("content")]


def tool_events(run: dict[str, Any]) -> list[str]:
    return [kind for kind in run["events"] if kind.startswith("TOOL_CALL")]


def the_interrupt(run: dict[str, Any]) -> dict[str, Any]:
    assert run["outcome"]["type"] == "interrupt", run["outcome"]
    (interrupt,) = run["outcome"]["interrupts"]
    return dict(interrupt)


def calls(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls among the client's messages: (name, arguments)."""
    return [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for m in result["messages"] for c in m.get("toolCalls") or ()]


def assert_paused_for_the_refund(run: dict[str, Any]) -> str:
    """The first run: lookup and its result, the refund's call, then its approval interrupt;
    the refund's call id."""
    assert_well_formed(run)
    assert tool_events(run) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
                                "TOOL_CALL_RESULT", "TOOL_CALL_START", "TOOL_CALL_ARGS",
                                "TOOL_CALL_END"]
    interrupt = the_interrupt(run)
    assert interrupt["reason"] == "tool_call"
    assert interrupt["toolCallId"] == interrupt["id"]
    assert interrupt["message"].startswith('Approve refund({"order_id":"1001","amount":40.0})?')
    assert interrupt["metadata"]["checkflow"]["toolCall"] == {
        "kind": "approval", "name": "refund", "callId": interrupt["id"],
        "arguments": {"order_id": "1001", "amount": 40.0},
        "description": "Refund an amount on an order (a person approves every refund first)."}
    schema = interrupt["responseSchema"]["$defs"]["ToolApproval"]
    assert schema["required"] == ["approved"] and "arguments" in schema["properties"]
    return str(interrupt["id"])


def test_an_approved_refund_runs_once_and_its_result_is_streamed(
    start_server: Any, drive: Any, ledger: Path
) -> None:
    server = serve(start_server)
    result = drive(server.url, "script", steps=[ASK, resume({"approved": True})])
    paused, approved = result["runs"]
    call_id = assert_paused_for_the_refund(paused)
    assert_well_formed(approved)
    assert approved["outcome"] == {"type": "success"}
    assert tool_events(approved) == ["TOOL_CALL_RESULT"]  # the call is not shown again
    assert texts(result)[-1] == "Refunded 40.00 on order 1001."
    tail = result["messages"][-3:]
    assert [m["id"] for m in tail[:2]] == [call_id, f"result-{call_id}"]
    assert json.loads(tail[1]["content"]) == {"order_id": "1001", "refunded": 40.0}
    assert result["pendingInterrupts"] == [] and result["errors"] == []
    assert all(run["warnings"] == [] for run in result["runs"])
    assert paid_calls(ledger) == [call_id]


def test_a_denied_refund_is_told_to_the_model_and_never_runs(
    start_server: Any, drive: Any, ledger: Path
) -> None:
    server = serve(start_server)
    result = drive(server.url, "script", steps=[
        ASK, resume({"approved": False, "reason": "not eligible"})])
    assert_paused_for_the_refund(result["runs"][0])
    assert result["runs"][1]["outcome"] == {"type": "success"}
    assert texts(result)[-1] == (
        "I did not refund it. (The user denied this call: not eligible. It did not run.)")
    assert paid_calls(ledger) == []


def test_a_bad_approval_is_a_run_error_and_the_interrupt_stays_answerable(
    start_server: Any, drive: Any, ledger: Path
) -> None:
    server = serve(start_server)
    result = drive(server.url, "script", steps=[
        ASK,
        resume({"approved": "yes"}),  # not a ToolApproval
        resume({"approved": True, "arguments": {"order_id": 1001}}),  # an edit that fails
        resume({"approved": True, "arguments": {"order_id": "1001", "amount": 12.5}}),
    ])
    paused, mistyped, misedited, approved = result["runs"]
    call_id = assert_paused_for_the_refund(paused)
    for run, said in ((mistyped, "Expected `bool`, got `str`"),
                      (misedited, "invalid arguments for tool 'refund'")):
        assert run["events"] == ["RUN_STARTED", "RUN_ERROR"]
        (error,) = run["runErrors"]
        assert error["code"] == "invalid_resume_payload" and said in error["message"]
        assert [i["id"] for i in run["pendingInterrupts"]] == [call_id]  # still open
    assert approved["outcome"] == {"type": "success"}
    assert texts(result)[-1] == "Refunded 12.50 on order 1001."
    assert paid_calls(ledger) == [call_id]


def test_a_restarted_server_shows_the_pause_and_takes_the_approval(
    start_server: Any, drive: Any, ledger: Path, tmp_path: Path
) -> None:
    storage, state = f"file:{tmp_path / 'store'}", str(tmp_path / "agent.json")
    first = serve(start_server, storage)
    paused = drive(first.url, "script", state=state, steps=[ASK])
    call_id = assert_paused_for_the_refund(paused["runs"][0])
    first.stop()
    second = serve(start_server, storage)
    result = drive(second.url, "script", state=state, steps=[
        {"pending": []},  # a reconnect (the client would insist on a resume otherwise):
        resume({"approved": True})])  # the pause as the checkpoint has it, then the answer
    reconnected, approved = result["runs"]
    assert tool_events(reconnected) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert the_interrupt(reconnected) == the_interrupt(paused["runs"][0])
    assert approved["outcome"] == {"type": "success"}
    assert texts(result)[-1] == "Refunded 40.00 on order 1001."
    assert native(second.url, result["threadId"])["status"] == "idle"
    assert paid_calls(ledger) == [call_id]


@pytest.mark.parametrize("answer", ["message+resume", "message", "resume"])
def test_a_client_tool_round_trip(start_server: Any, drive: Any, answer: str) -> None:
    server = serve(start_server)
    steps: list[dict[str, Any]] = [ASK_CLIENT]
    if answer == "message+resume":  # what @ag-ui/client sends: it insists on a resume
        steps.append({"tool": {"content": "yes, go ahead"}, "resume": "pending",
                      "answers": [{"status": "resolved"}]})
    elif answer == "message":  # a client that answers with the tool message alone
        steps.append({"tool": {"content": "yes, go ahead"}, "pending": []})
    else:
        steps.append(resume("yes, go ahead"))
    result = drive(server.url, "script", steps=steps)
    asked, answered = result["runs"]
    assert_well_formed(asked)
    assert tool_events(asked) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    interrupt = the_interrupt(asked)
    call_id = interrupt["id"]
    assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"] == call_id
    assert interrupt["metadata"]["checkflow"]["toolCall"]["kind"] == "client"
    assert calls(result) == [("confirm_with_user",
                              {"question": "please call confirm_with_user"})]
    assert_well_formed(answered)
    assert answered["outcome"] == {"type": "success"}
    assert tool_events(answered) == []  # the client holds the result: not shown back
    assert texts(result)[-1] == "Your confirm_with_user said: yes, go ahead"
    (result_message,) = texts(result, "tool")
    assert result_message == "yes, go ahead"
    assert [m["toolCallId"] for m in result["messages"] if m["role"] == "tool"] == [call_id]
    for run in result["runs"]:  # the client's tools are input, never state it is shown
        assert all("checkflow.client_tools" not in state for _, state in run["states"])
    assert result["errors"] == []


def test_a_tool_message_for_an_unknown_call_is_a_run_error_then_the_right_one_works(
    start_server: Any, drive: Any, tmp_path: Path
) -> None:
    server = serve(start_server)
    state, spoiled = tmp_path / "agent.json", tmp_path / "spoiled.json"
    drive(server.url, "script", state=str(state), steps=[ASK_CLIENT])
    shutil.copy(state, spoiled)  # the wrong answer stays in that copy of the client
    wrong = drive(server.url, "script", state=str(spoiled), steps=[
        {"tool": {"content": "yes", "toolCallId": "call_never_made"}, "resume": "pending",
         "answers": [{"status": "resolved"}]}])
    (refused,) = wrong["runs"]
    assert refused["events"] == ["RUN_STARTED", "RUN_ERROR"]
    (error,) = refused["runErrors"]
    assert error["code"] == "unknown_tool_call" and "call_never_made" in error["message"]
    right = drive(server.url, "script", state=str(state), steps=[
        {"tool": {"content": "yes"}, "resume": "pending", "answers": [{"status": "resolved"}]}])
    assert right["runs"][0]["outcome"] == {"type": "success"}
    assert texts(right)[-1] == "Your confirm_with_user said: yes"


def test_each_run_offers_only_the_tools_it_declares(start_server: Any, drive: Any) -> None:
    server = serve(start_server)
    result = drive(server.url, "script", steps=[
        {"add": {"text": "hello"}, "tools": [CONFIRM]},
        {"add": {"text": "please call confirm_with_user"}},  # no tools this time
    ])
    for run in result["runs"]:
        assert run["outcome"] == {"type": "success"} and tool_events(run) == []
    assert texts(result)[-1].startswith("I can look an order up")
