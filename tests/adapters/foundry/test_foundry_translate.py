"""Workflow events as Responses events: agent deltas, outputs, then what is still pending."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from foundry_schema import assert_well_formed

from checkflow.adapters.foundry import ApprovalRequest
from checkflow.adapters.foundry._events import EventBuilder
from checkflow.adapters.foundry._objects import response_object
from checkflow.adapters.foundry._translate import (
    RunTranslator,
    output_text,
    response_status,
)
from checkflow.adapters.foundry._view import error_of, status_of
from checkflow.agents import (
    AgentResponse,
    AgentResponseUpdate,
    AgentRunUpdateEvent,
    ChatMessage,
    ClientToolCall,
    TextContent,
    ToolApproval,
    ToolApprovalRequest,
    UserInputRequestContent,
)
from checkflow.hosting import TurnRecord
from checkflow.workflows import (
    OutputEvent,
    PendingRequest,
    PendingRequestView,
    RequestInfoEvent,
    RunStatus,
    SuperstepStartedEvent,
)


@dataclass
class Ticket:
    id: int
    title: str


def _update(executor: str, text: str) -> AgentRunUpdateEvent:
    return AgentRunUpdateEvent(executor, AgentResponseUpdate(contents=(TextContent(text),)))


def _run(events: list, pending: dict[str, PendingRequest]) -> list[dict]:
    builder = EventBuilder("resp_t")

    def body(status: str, output: list) -> dict:
        return response_object(id="resp_t", created_at=1, status=status, model="m",
                               output=output, conversation_id="c")

    translator = RunTranslator(builder)
    out = builder.start(lambda status: body(status, []))
    for event in events:
        out += translator.on_event(event)
    out += translator.finish(pending, lambda output: body("completed", output))
    assert_well_formed(out)
    return out


def _ask(request_id: str, response_type: type = str) -> PendingRequest:
    return PendingRequest(request_id, {"q": request_id}, response_type, "reviewer")


def test_agent_updates_stream_into_one_message_per_executor_turn() -> None:
    reply = AgentResponse([ChatMessage("assistant", "Hello")])
    events = _run([_update("a", "Hel"), _update("a", "lo"), OutputEvent("a", reply),
                   _update("b", "Bye"), OutputEvent("b", AgentResponse(
                       [ChatMessage("assistant", "Bye")]))], {})
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert deltas == ["Hel", "lo", "Bye"]
    final = events[-1]["response"]["output"]
    assert [item["content"][0]["text"] for item in final] == ["Hello", "Bye"]


def test_an_agent_reply_that_was_not_streamed_is_one_whole_message() -> None:
    events = _run([SuperstepStartedEvent(1), OutputEvent("a", AgentResponse(
        [ChatMessage("assistant", "whole")]))], {})
    assert [item["content"][0]["text"] for item in events[-1]["response"]["output"]] == [
        "whole"]


def test_pending_requests_are_listed_once_after_the_outputs_in_the_hosts_order() -> None:
    events = _run([RequestInfoEvent(_ask("r1")), OutputEvent("w", "drafted"),
                   RequestInfoEvent(_ask("r1"))],
                  {"r0": _ask("r0"), "r1": _ask("r1")})
    output = events[-1]["response"]["output"]
    assert [item["type"] for item in output] == ["message", "function_call", "function_call"]
    assert [item["call_id"] for item in output[1:]] == ["r0", "r1"]  # as a derived view lists
    assert json.loads(output[1]["arguments"]) == {
        "request_id": "r0", "data": {"q": "r0"}, "response_schema": {"type": "string"}}


def test_an_open_agent_message_is_closed_before_a_request() -> None:
    events = _run([_update("a", "thinking"), RequestInfoEvent(_ask("r1"))], {"r1": _ask("r1")})
    types = [item["type"] for item in events[-1]["response"]["output"]]
    assert types == ["message", "function_call"]


def test_outputs_show_as_text_or_json() -> None:
    assert output_text("plain") == "plain"
    assert output_text(AgentResponse([ChatMessage("assistant", "hi")])) == "hi"
    assert output_text(Ticket(7, "née")) == '{"id":7,"title":"née"}'
    assert output_text([1, {"a": None}]) == '[1,{"a":null}]'


def test_a_pause_is_completed_and_a_failure_carries_its_error() -> None:
    assert response_status(RunStatus.AWAITING_RESPONSES) == "completed"
    assert response_status(RunStatus.IDLE) == "completed"
    assert response_status(RunStatus.CANCELLED) == "cancelled"
    assert response_status(RunStatus.FAILED) == "failed"
    failed = TurnRecord("t", None, "responses", {}, "failed", RunStatus.FAILED, error="boom")
    assert status_of(failed) == "failed"
    assert error_of(failed, "failed") == {"code": "server_error", "message": "boom"}
    running = TurnRecord("t", None, "responses", {}, "running", RunStatus.RUNNING)
    assert status_of(running) == "in_progress" and error_of(running, "in_progress") is None
    paused = TurnRecord("t", None, "responses", {}, "committed", RunStatus.AWAITING_RESPONSES)
    assert status_of(paused) == "completed"


def test_approval_shaped_requests_are_mcp_approval_requests_and_others_function_calls() -> None:
    explicit = PendingRequest("r2", ApprovalRequest("deploy v2?", {"env": "prod"}), bool, "ops")
    stored = PendingRequestView("r3", {"q": 3}, None, "ops", response_type_name="bool",
                                response_schema={"type": "boolean"})  # read elsewhere
    events = _run([], {"r0": _ask("r0", bool), "r1": _ask("r1"), "r2": explicit, "r3": stored})
    output = events[-1]["response"]["output"]
    assert [item["type"] for item in output] == [
        "mcp_approval_request", "function_call", "mcp_approval_request", "mcp_approval_request"]
    approval = output[2]
    assert approval["id"] == "r2" and approval["server_label"] == "checkflow"
    assert json.loads(approval["arguments"])["data"] == {"description": "deploy v2?",
                                                         "details": {"env": "prod"}}
    assert not any(e["type"].startswith("response.function_call_arguments") and
                   e["item_id"] in ("r0", "r2", "r3") for e in events)


def _tool_pause(call_id: str, asked: ToolApprovalRequest | ClientToolCall,
                response_type: object) -> PendingRequest:
    """A tool call an ``AgentExecutor`` paused on, as it asks (the call id is the request's)."""
    return PendingRequest(call_id, UserInputRequestContent(call_id, asked), response_type,
                          "support")


def test_tool_pauses_are_named_after_their_tool_with_the_calls_arguments() -> None:
    approval = _tool_pause("call_1", ToolApprovalRequest(
        tool_name="refund", call_id="call_1", arguments={"order_id": "1001", "amount": 40.0},
        description="Refund an order."), ToolApproval)
    client = _tool_pause("call_2", ClientToolCall(
        tool_name="confirm_with_user", call_id="call_2", arguments={"question": "ok?"}), Any)
    events = _run([], {"call_1": approval, "call_2": client, "r3": _ask("r3")})
    asked, called, other = events[-1]["response"]["output"]
    assert asked == {"type": "mcp_approval_request", "id": "call_1", "server_label": "checkflow",
                     "name": "refund", "arguments": '{"order_id":"1001","amount":40.0}'}
    assert (called["type"], called["call_id"], called["name"]) == (
        "function_call", "call_2", "confirm_with_user")
    assert json.loads(called["arguments"]) == {"question": "ok?"}
    (done,) = [e for e in events if e["type"] == "response.function_call_arguments.done"
               and e["item_id"] == called["id"]]
    assert done["name"] == "confirm_with_user"
    assert other["name"] == "request_info"  # every other pause as before
    assert json.loads(other["arguments"])["request_id"] == "r3"
