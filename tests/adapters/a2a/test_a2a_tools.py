"""Issue 30 over A2A: a tool call that waits for a person's approval, or for the client's own
tool, is INPUT_REQUIRED with the call in the pending request's ``tool`` object; the answer
(an approval, a denial, edited arguments, the client tool's result) resumes the task, from a
fresh host too; a bad answer is -32602 naming the request and loses nothing. Every test runs
over JSON-RPC and REST."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError
from a2a_tool_flows import build
from conftest import ClientMaker, make_app, send, send_task, user_message

from checkflow.adapters.a2a._parts import proto_value, python_value
from checkflow.adapters.a2a._tools import tool_text, tool_view
from checkflow.agents import (
    ClientToolCall,
    ToolApproval,
    ToolApprovalRequest,
    UserInputRequestContent,
)
from checkflow.hosting import WorkflowHost
from checkflow.sessions import FileSessionStore
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import PendingRequest, Workflow

INPUT_REQUIRED = a2a_pb2.TASK_STATE_INPUT_REQUIRED
COMPLETED = a2a_pb2.TASK_STATE_COMPLETED
REFUND = "Please refund order 1001"
DESCRIPTION = "Refund an amount on an order (a person approves every refund first)."


@pytest.fixture
def workflow() -> Workflow:
    return build()


def pending_of(task: a2a_pb2.Task) -> list[dict[str, Any]]:
    (data,) = [python_value(p.data) for p in task.status.message.parts
               if p.WhichOneof("content") == "data"]
    return list(data["pendingRequests"])


def status_text(task: a2a_pb2.Task) -> str:
    return "".join(p.text for p in task.status.message.parts if p.WhichOneof("content") == "text")


def outputs(task: a2a_pb2.Task) -> list[str]:
    return [p.text for a in task.artifacts for p in a.parts]


def reply(task: a2a_pb2.Task, value: Any) -> a2a_pb2.Message:
    part = a2a_pb2.Part(text=value) if isinstance(value, str) else a2a_pb2.Part(
        data=proto_value(value))
    return user_message(part, task_id=task.id)


def meta(task: a2a_pb2.Task) -> dict[str, Any]:
    return dict(python_value(task.metadata)["checkflow"])


async def test_an_approval_is_input_required_with_the_call_and_approving_runs_it(
        connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message(REFUND))
    assert paused.status.state == INPUT_REQUIRED
    (request,) = pending_of(paused)
    assert request["tool"] == {"kind": "tool_approval", "toolName": "refund",
                               "callId": "call_1_refund", "description": DESCRIPTION,
                               "arguments": {"order_id": "1001", "amount": 40}}
    assert request["requestId"] == "call_1_refund" == meta(paused)["pendingRequestIds"][0]
    assert request["responseSchema"]["$defs"]["ToolApproval"]["required"] == ["approved"]
    text = status_text(paused)
    assert 'approval to call refund with {"amount":40.0,"order_id":"1001"}' in text
    assert '{"approved": true}' in text and "(request call_1_refund)" in text
    read = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))  # from the checkpoint
    assert read.status == paused.status
    done = await send_task(client, reply(paused, {"approved": True}))
    assert (done.id, done.status.state) == (paused.id, COMPLETED)
    assert outputs(done) == ["Refunded 40.00 on order 1001."]
    assert meta(done)["pendingRequestIds"] == []


async def test_a_denial_tells_the_agent_and_edited_arguments_are_used(
        connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message(REFUND))
    denied = await send_task(client, reply(paused, {"approved": False,
                                                    "reason": "the kettle works"}))
    assert denied.status.state == COMPLETED
    (said,) = outputs(denied)
    assert said.startswith("I did not refund it.") and "the kettle works" in said
    again = await send_task(client, user_message(REFUND, context_id=paused.context_id))
    edited = await send_task(client, reply(again, {
        "approved": True, "arguments": {"order_id": "1001", "amount": 10.0}}))
    assert outputs(edited) == ["Refunded 10.00 on order 1001."]


@pytest.mark.parametrize(("answer", "field", "says"), [
    ("yes", "$", "Expected `object`, got `str`"),
    ({"approved": "maybe"}, "$.approved", "Expected `bool`, got `str`"),
    ({"approved": True, "arguments": {"order_id": 1001, "amount": 40.0}}, None,
     "invalid arguments for tool 'refund'"),
], ids=["text", "not-a-bool", "bad-edit"])
async def test_a_bad_answer_is_invalid_params_and_loses_nothing(
        connect: ClientMaker, answer: Any, field: str | None, says: str) -> None:
    client = await connect()
    paused = await send_task(client, user_message(REFUND))
    with pytest.raises(InvalidParamsError) as refused:
        await send_task(client, reply(paused, answer))
    assert says in str(refused.value) and "call_1_refund" in str(refused.value)
    expected = {"reason": "invalid_response", "requestIds": ["call_1_refund"]}
    assert refused.value.data == (expected if field is None else {**expected, "field": field})
    still = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert (still.status.state, meta(still)) == (INPUT_REQUIRED, meta(paused))
    assert pending_of(still) == pending_of(paused)
    done = await send_task(client, reply(paused, {"approved": True}))
    assert outputs(done) == ["Refunded 40.00 on order 1001."]


async def test_a_client_tool_call_is_input_required_and_its_result_answers_it(
        connect: ClientMaker) -> None:
    client = await connect()
    asked = "please call confirm_with_user"
    paused = await send_task(client, user_message(asked))
    assert paused.status.state == INPUT_REQUIRED
    (request,) = pending_of(paused)
    assert request["tool"] == {"kind": "client_tool_call", "toolName": "confirm_with_user",
                               "callId": "call_0_confirm_with_user",
                               "arguments": {"question": asked}}
    assert request["responseSchema"] == {}
    assert status_text(paused).startswith(
        "waiting for your tool confirm_with_user to run with "
        '{"question":"please call confirm_with_user"}: answer with its result')
    done = await send_task(client, reply(paused, "yes, go ahead"))
    assert outputs(done) == ["Your confirm_with_user said: yes, go ahead"]


async def test_two_approvals_wait_together_and_are_answered_by_call_id(
        connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message("refund both"))
    assert [(r["requestId"], r["tool"]["kind"], r["tool"]["arguments"]["order_id"])
            for r in pending_of(paused)] == [("call_a", "tool_approval", "1001"),
                                              ("call_b", "tool_approval", "1002")]
    assert "waiting for 2 response(s)" in status_text(paused)
    with pytest.raises(InvalidParamsError, match="send one data part mapping request ids"):
        await send_task(client, reply(paused, {"approved": True}))  # which one?
    half = await send_task(client, reply(paused, {"call_a": {"approved": True}}))
    assert half.status.state == INPUT_REQUIRED
    assert [r["requestId"] for r in pending_of(half)] == ["call_b"]
    done = await send_task(client, reply(half, {"call_b": {"approved": False}}))
    (said,) = outputs(done)
    assert said.startswith("{'order_id': '1001', 'refunded': 40.0}")
    assert "The user denied this call" in said


async def test_a_streamed_approval_ends_input_required_with_the_call(
        connect: ClientMaker) -> None:
    events = await send(await connect(streaming=True), user_message(REFUND))
    last = events[-1].status_update
    assert last.status.state == INPUT_REQUIRED
    (data,) = [python_value(p.data) for p in last.status.message.parts
               if p.WhichOneof("content") == "data"]
    assert data["pendingRequests"][0]["tool"]["toolName"] == "refund"
    read = await (await connect()).get_task(a2a_pb2.GetTaskRequest(id=last.task_id))
    assert read.status.message == last.status.message


async def test_an_approval_is_answered_by_a_fresh_host_on_the_same_stores(
        connect: ClientMaker,
        stores: tuple[FileSessionStore, FileCheckpointStorage]) -> None:
    paused = await send_task(await connect(), user_message(REFUND))
    fresh = make_app(WorkflowHost(build(), session_store=stores[0],
                                  checkpoint_storage=stores[1]))
    client = await connect(target=fresh)
    read = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert pending_of(read) == pending_of(paused)
    done = await send_task(client, reply(read, {"approved": True}))
    assert outputs(done) == ["Refunded 40.00 on order 1001."]


def _request(data: Any, response_type: Any = ToolApproval) -> PendingRequest:
    return PendingRequest("r1", data, response_type, "support")


def test_only_tool_requests_get_a_tool_object_and_long_arguments_are_cut() -> None:
    assert tool_view(_request({"question": "publish?"}, bool)) is None
    assert tool_text({"r1": _request({"question": "publish?"}, bool)}) is None
    call = ClientToolCall(tool_name="draw", call_id="r1", arguments={"svg": "x" * 500})
    assert tool_view(_request(call, Any)) == {  # as asked directly, not wrapped
        "kind": "client_tool_call", "toolName": "draw", "callId": "r1",
        "arguments": {"svg": "x" * 500}}
    text = tool_text({"r1": _request(UserInputRequestContent("r1", call), Any)})
    assert text is not None and '{"svg":"' + "x" * 192 + '...: answer' in text
    approval = ToolApprovalRequest(tool_name="refund", call_id="r1")
    two = {"r1": _request(approval), "r2": _request(approval)}
    assert tool_text(two) is None  # the generic text names both ids
