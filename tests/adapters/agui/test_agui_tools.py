"""Tool calls over AG-UI, on hand-built data: the ``TOOL_CALL_*`` events and messages, the
``tool_call`` interrupt, the tool messages that answer client tools, and the thread's calls."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from ag_ui.core import Event, ResumeEntry, RunAgentInput, Tool, ToolMessage, UserMessage
from pydantic import TypeAdapter

from checkflow.adapters.agui import AGUIAdapter
from checkflow.adapters.agui._events import RunTranslator
from checkflow.adapters.agui._input import (
    ResumeViolation,
    chat_messages,
    resume_responses,
    resumed_results,
    tool_answers,
)
from checkflow.adapters.agui._thread import PROTOCOL, ThreadView, turn_origin
from checkflow.adapters.agui._tools import (
    ToolCalls,
    client_tools,
    request_views,
    result_text,
    tool_view,
)
from checkflow.adapters.agui._writes import StateWrites
from checkflow.agents import (
    CLIENT_TOOLS_KEY,
    AgentResponse,
    AgentResponseUpdate,
    AgentRunUpdateEvent,
    ChatMessage,
    ClientTool,
    ClientToolCall,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    ToolApproval,
    ToolApprovalRequest,
    UserInputRequestContent,
)
from checkflow.hosting import TurnRecord, WorkflowHost, create_app, jsonable
from checkflow.workflows import OutputEvent, PendingRequest, RunStatus
from samples.support import workflow as support_workflow
from tests.e2e.agui_wire import parse_sse, untimed

EVENT: TypeAdapter[Any] = TypeAdapter(Event)
REFUND = ToolApprovalRequest(tool_name="refund", call_id="c-refund",
                             arguments={"order_id": "1001", "amount": 40.0},
                             description="Refund an order.")
CONFIRM = ClientToolCall(tool_name="confirm", call_id="c-confirm", arguments={"question": "ok?"})


def _pending(asked: Any) -> PendingRequest:
    kind = ToolApproval if isinstance(asked, ToolApprovalRequest) else Any
    return PendingRequest(asked.call_id, UserInputRequestContent(asked.call_id, asked), kind,
                          "support")


def _translator() -> RunTranslator:
    counter = itertools.count(1)
    return RunTranslator("t", "r", to_json=jsonable, new_id=lambda: f"m{next(counter)}",
                         clock=lambda: 1)


def _wire(events: list[Any]) -> list[dict[str, Any]]:
    dumped = [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in events]
    for event in dumped:
        EVENT.validate_python(event)  # each is a valid AG-UI event
        event.pop("timestamp", None)
    return dumped


def _update(*contents: Any, role: str = "assistant") -> AgentRunUpdateEvent:
    return AgentRunUpdateEvent("support", AgentResponseUpdate(tuple(contents), role))  # type: ignore[arg-type]


# -- the tool view and the client's tools ------------------------------------------------------


def test_a_tool_view_names_the_call_a_request_pauses_for() -> None:
    assert tool_view(_pending(REFUND).data) == {
        "kind": "approval", "name": "refund", "callId": "c-refund",
        "arguments": {"order_id": "1001", "amount": 40.0}, "description": "Refund an order."}
    assert tool_view(CONFIRM) == {"kind": "client", "name": "confirm", "callId": "c-confirm",
                                  "arguments": {"question": "ok?"}}
    assert tool_view({"question": "ok?"}) is None


def test_the_clients_tools_become_client_tools() -> None:
    tools = [Tool(name="confirm", description="Ask", parameters={"type": "object"}),
             Tool(name="bare", description="", parameters="not a schema")]
    assert client_tools(tools) == [
        ClientTool(name="confirm", description="Ask", parameters={"type": "object"}),
        ClientTool(name="bare", description="",
                   parameters={"type": "object", "properties": {}})]
    assert client_tools(None) == []


def test_a_result_is_text_as_it_is_else_json() -> None:
    assert result_text("done") == "done"
    assert result_text({"refunded": 40.0}) == '{"refunded":40.0}'


def test_each_call_and_each_result_is_shown_once_and_never_one_the_client_sent() -> None:
    messages: list[dict[str, Any]] = []
    tools = ToolCalls(messages)
    tools.answered(["c-client"])
    first = tools.call("c1", "lookup", {"order_id": "1"})
    assert [e.type.value for e in first] == ["TOOL_CALL_START", "TOOL_CALL_ARGS",
                                            "TOOL_CALL_END"]
    assert tools.call("c1", "lookup", {"order_id": "1"}) == []
    results = [FunctionResultContent("c1", "one"), FunctionResultContent("c-client", "mine")]
    assert len(tools.contents(results, results=True)) == 1
    assert tools.contents(results, results=True) == []
    assert tools.contents(results, results=False) == []
    assert messages == [
        {"id": "c1", "role": "assistant", "toolCalls": [
            {"id": "c1", "type": "function",
             "function": {"name": "lookup", "arguments": '{"order_id":"1"}'}}]},
        {"id": "result-c1", "role": "tool", "toolCallId": "c1", "content": "one"}]


# -- the translator ----------------------------------------------------------------------------


def test_streamed_calls_end_the_text_before_them_and_results_are_tool_call_results() -> None:
    t = _translator()
    events = [*t.translate(_update(TextContent("Let me look."))),
              *t.translate(_update(FunctionCallContent("c1", "lookup", {"order_id": "1"}))),
              *t.translate(_update(FunctionResultContent("c1", {"found": True}), role="tool"))]
    assert _wire(events) == [
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Let me look."},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "lookup",
         "parentMessageId": "c1"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"order_id":"1"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "result-c1", "toolCallId": "c1",
         "content": '{"found":true}', "role": "tool"}]
    assert [m["id"] for m in t.messages] == ["m1", "c1", "result-c1"]


def test_a_tool_call_pause_is_a_tool_call_interrupt_after_its_call() -> None:
    t = _translator()
    views = request_views([_pending(REFUND), _pending(CONFIRM)])
    events = _wire(t.finish(RunStatus.AWAITING_RESPONSES, pending=views, transcript=[]))
    assert [e["type"] for e in events] == ["TOOL_CALL_START", "TOOL_CALL_ARGS",
                                           "TOOL_CALL_END"] * 2 + ["MESSAGES_SNAPSHOT",
                                                                   "RUN_FINISHED"]
    assert [m["id"] for m in events[-2]["messages"]] == ["c-refund", "c-confirm"]
    approval, client = events[-1]["outcome"]["interrupts"]
    assert approval["reason"] == "tool_call" and approval["toolCallId"] == "c-refund"
    assert approval["message"] == (
        'Approve refund({"order_id":"1001","amount":40.0})? Refund an order.')
    assert approval["responseSchema"]["$defs"]["ToolApproval"]["required"] == ["approved"]
    assert approval["metadata"]["checkflow"]["toolCall"]["kind"] == "approval"
    assert client["reason"] == "tool_call" and client["toolCallId"] == "c-confirm"
    assert "tool message" in client["message"]
    assert client["metadata"]["checkflow"]["toolCall"]["kind"] == "client"


def test_a_call_already_streamed_is_not_shown_again_at_the_pause() -> None:
    t = _translator()
    t.translate(_update(FunctionCallContent("c-refund", "refund", {"order_id": "1001"})))
    events = t.finish(RunStatus.AWAITING_RESPONSES, pending=request_views([_pending(REFUND)]))
    assert [e.type.value for e in events] == ["RUN_FINISHED"]


def test_calls_a_response_leaves_for_the_caller_are_tool_calls_not_custom_output() -> None:
    t = _translator()
    reply = AgentResponse([ChatMessage("assistant", [
        TextContent("Calling."), FunctionCallContent("c9", "external", {})])])
    events = _wire(t.translate(OutputEvent("support", reply)))
    assert [e["type"] for e in events] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                           "TEXT_MESSAGE_END", "TOOL_CALL_START",
                                           "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert [e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"] == ["{}"]


# -- the thread --------------------------------------------------------------------------------


def _record(turn_id: str, status: RunStatus, pending: dict[str, PendingRequest],
            messages: list[dict[str, Any]], outputs: tuple[Any, ...] = ()) -> TurnRecord:
    return TurnRecord(turn_id, turn_id, PROTOCOL, turn_origin(turn_id, messages).data,
                      "committed", status, outputs=outputs, pending_requests=pending)


def test_the_thread_shows_the_calls_it_paused_for_once_and_knows_their_kinds() -> None:
    ask = {"id": "u1", "role": "user", "content": "refund"}
    first = _record("t1", RunStatus.AWAITING_RESPONSES,
                    {"c-refund": _pending(REFUND), "c-confirm": _pending(CONFIRM)}, [ask])
    partly = _record("t2", RunStatus.AWAITING_RESPONSES, {"c-confirm": _pending(CONFIRM)}, [])
    view = ThreadView.of([first, partly], jsonable)
    assert [m["id"] for m in view.transcript] == ["u1", "c-refund", "c-confirm"]
    assert view.calls == {"c-refund", "c-confirm"}
    assert view.tools == {"c-confirm": "client"}


# -- the client's answers ----------------------------------------------------------------------


def _tool(call_id: str, content: str = "yes", id: str = "tm") -> ToolMessage:
    return ToolMessage(id=id, role="tool", tool_call_id=call_id, content=content)


KINDS = {"c-confirm": "client", "c-refund": "approval"}


def test_a_tool_message_answers_an_open_client_tool_and_the_rest_stays_input() -> None:
    ask = UserMessage(id="u2", role="user", content="next")
    split = tool_answers([_tool("c-confirm", "sure"), _tool("c-refund", id="tm2"), ask],
                         KINDS, set(KINDS), set(KINDS))
    assert split.answers == {"c-confirm": "sure"}
    assert [m.id for m in split.rest] == ["tm2", "u2"]  # an approval is answered in resume[]


@pytest.mark.parametrize(("messages", "code"), [
    ([_tool("c-confirm"), _tool("c-confirm", id="tm2")], "duplicate_interrupt"),
    ([_tool("c-old")], "already_resolved"),
    ([_tool("c-never")], "unknown_tool_call"),
])
def test_a_tool_message_that_answers_nothing_open_is_refused(messages: list[Any],
                                                             code: str) -> None:
    with pytest.raises(ResumeViolation) as refused:
        tool_answers(messages, KINDS, {*KINDS, "c-old"}, {*KINDS, "c-old"})
    assert refused.value.code == code


def test_a_tool_message_for_a_call_the_new_messages_make_is_history() -> None:
    resent = [{"id": "a1", "role": "assistant", "toolCalls": [
        {"id": "c-x", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
              {"id": "tm", "role": "tool", "toolCallId": "c-x", "content": "found"}]
    fresh = RunAgentInput.model_validate({"threadId": "t", "runId": "r",
                                          "messages": resent}).messages
    assert [m.id for m in tool_answers(fresh, {}, set(), set()).rest] == ["a1", "tm"]
    assert chat_messages(fresh) == [
        ChatMessage("assistant", [FunctionCallContent("c-x", "lookup", {})]),
        ChatMessage("tool", FunctionResultContent("c-x", "found"))]


def _entry(call_id: str, payload: Any = None, status: str = "resolved") -> ResumeEntry:
    return ResumeEntry(interrupt_id=call_id, status=status, payload=payload)  # type: ignore[arg-type]


def test_a_resume_entry_may_repeat_a_tool_messages_answer_but_never_contradict_it() -> None:
    answered = {"c-confirm": "sure"}
    for entries in ([], [_entry("c-confirm")], [_entry("c-confirm", "sure")]):
        assert resume_responses(entries, {"c-confirm"}, set(), has_input=False,
                                answered=answered) == {"c-confirm": "sure"}
    for entry in (_entry("c-confirm", "no"), _entry("c-confirm", status="cancelled")):
        with pytest.raises(ResumeViolation) as refused:
            resume_responses([entry], {"c-confirm"}, set(), has_input=False, answered=answered)
        assert refused.value.code == "conflicting_answer"


def test_a_tool_message_does_not_answer_the_other_open_interrupts() -> None:
    with pytest.raises(ResumeViolation) as refused:
        resume_responses(None, set(KINDS), set(), has_input=False,
                         answered={"c-confirm": "sure"})
    assert refused.value.code == "resume_incomplete"


def test_a_tool_message_with_new_input_is_input_with_resume() -> None:
    with pytest.raises(ResumeViolation) as refused:
        resume_responses(None, {"c-confirm"}, set(), has_input=True,
                         answered={"c-confirm": "sure"})
    assert refused.value.code == "input_with_resume"


def test_a_client_tool_answered_in_resume_is_recorded_as_its_tool_message() -> None:
    entries = [_entry("c-confirm", {"ok": True}), _entry("c-refund", {"approved": True})]
    assert resumed_results(entries, KINDS, answered=set()) == [
        {"id": "result-c-confirm", "role": "tool", "toolCallId": "c-confirm",
         "content": '{"ok":true}'}]
    assert resumed_results(entries, KINDS, answered={"c-confirm"}) == []
    assert resumed_results([_entry("c-confirm", status="cancelled")], KINDS, set()) == []


def test_the_client_tools_key_is_never_writable_by_a_client() -> None:
    with pytest.raises(ValueError, match="not writable"):
        StateWrites({CLIENT_TOOLS_KEY: list})


# -- in-process, the support sample ------------------------------------------------------------


@pytest.fixture
async def support() -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(WorkflowHost(support_workflow), adapters=[AGUIAdapter()])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test") as client:
        yield client


async def _post(client: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = await client.post("/agui", json=body)
    assert response.status_code == 200, response.text
    return parse_sse(response.text)


def _run(run_id: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": "t", "runId": run_id, "messages": messages, **extra}


ASKED = [{"id": "u1", "role": "user", "content": "please call confirm"}]
DECLARED = [{"name": "confirm", "description": "Ask.", "parameters": {
    "type": "object", "properties": {"question": {"type": "string"}},
    "required": ["question"]}}]


async def test_a_retry_of_a_paused_run_replays_its_call_and_its_interrupt(
        support: httpx.AsyncClient) -> None:
    first = await _post(support, _run("r1", ASKED, tools=DECLARED))
    again = await _post(support, _run("r1", ASKED, tools=DECLARED))
    for events in (first, again):
        assert [e["type"] for e in events if e["type"].startswith("TOOL_CALL")] == [
            "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert untimed(first[-1]) == untimed(again[-1])
    (interrupt,) = again[-1]["outcome"]["interrupts"]
    assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"] == "call_0_confirm"


async def test_a_conflicting_answer_commits_nothing_and_the_call_stays_answerable(
        support: httpx.AsyncClient) -> None:
    await _post(support, _run("r1", ASKED, tools=DECLARED))
    answer = {"id": "tm1", "role": "tool", "toolCallId": "call_0_confirm", "content": "yes"}
    refused = await _post(support, _run("r2", [*ASKED, answer], resume=[
        {"interruptId": "call_0_confirm", "status": "resolved", "payload": "no"}]))
    assert [e["type"] for e in refused] == ["RUN_STARTED", "RUN_ERROR"]
    assert refused[-1]["code"] == "conflicting_answer"
    done = await _post(support, _run("r3", [*ASKED, answer], resume=[
        {"interruptId": "call_0_confirm", "status": "resolved", "payload": "yes"}]))
    assert done[-1]["outcome"] == {"type": "success"}
    said = "".join(e["delta"] for e in done if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert said == "Your confirm said: yes"
