"""Issue 30 over A2A, end to end: ``python -m checkflow serve samples.support:workflow`` on
loopback, driven by the official a2a-sdk client over JSON-RPC and REST. A refund waits for
approval as INPUT_REQUIRED with the call in the pending request's ``tool`` object; approving
pays it (once: the sample's ledger says so, across a restart between the pause and the
answer), a denial tells the agent, a bad answer is -32602 and the task still waits; a
client's tool (declared by the served workflow, as A2A declares none) is answered with its
result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError
from a2a_wire import message, one_task
from google.protobuf import json_format
from support_ledger import paid

pytestmark = pytest.mark.slow

SUPPORT = "samples.support:workflow"
CLIENT_TOOLS = "tests.adapters.a2a.a2a_tool_flows:workflow"
A2A = ("--adapters", "native,a2a")
INPUT_REQUIRED = a2a_pb2.TASK_STATE_INPUT_REQUIRED
COMPLETED = a2a_pb2.TASK_STATE_COMPLETED
REFUND = "Please refund order 1001"


def pending_of(status: a2a_pb2.TaskStatus) -> list[dict[str, Any]]:
    (data,) = [json_format.MessageToDict(p.data) for p in status.message.parts
               if p.WhichOneof("content") == "data"]
    return list(data["pendingRequests"])


def outputs(task: a2a_pb2.Task) -> list[str]:
    return [p.text for a in task.artifacts for p in a.parts]


async def test_a_refund_waits_for_approval_and_approving_pays_it_once(
        start_server: Any, connect: Any, ledger: Path) -> None:
    server = start_server(SUPPORT, None, *A2A)
    client = await connect(server.url)
    paused = await one_task(client, message(REFUND))
    assert paused.status.state == INPUT_REQUIRED
    (request,) = pending_of(paused.status)
    assert request["tool"] == {
        "kind": "tool_approval", "toolName": "refund", "callId": "call_1_refund",
        "arguments": {"order_id": "1001", "amount": 40.0},
        "description": "Refund an amount on an order (a person approves every refund first)."}
    assert request["requestId"] == "call_1_refund"
    assert not ledger.exists()  # nothing is paid before the approval
    done = await one_task(client, message({"approved": True}, task_id=paused.id))
    assert (done.id, done.status.state) == (paused.id, COMPLETED)
    assert outputs(done) == ["Refunded 40.00 on order 1001."]
    assert [e["call_id"] for e in paid(ledger)] == ["call_1_refund"]


async def test_a_denial_is_told_to_the_agent(start_server: Any, connect: Any,
                                             ledger: Path) -> None:
    client = await connect(start_server(SUPPORT, None, *A2A).url)
    paused = await one_task(client, message(REFUND))
    done = await one_task(client, message({"approved": False, "reason": "not eligible"},
                                          task_id=paused.id))
    (said,) = outputs(done)
    assert said.startswith("I did not refund it. (") and "not eligible" in said
    assert not ledger.exists()


async def test_a_bad_answer_is_refused_and_a_good_one_then_works(
        start_server: Any, connect: Any, ledger: Path) -> None:
    client = await connect(start_server(SUPPORT, None, *A2A).url)
    paused = await one_task(client, message(REFUND))
    with pytest.raises(InvalidParamsError) as refused:  # edited arguments the tool refuses
        await one_task(client, message({"approved": True, "arguments": {"order_id": 1001}},
                                       task_id=paused.id))
    assert "invalid arguments for tool 'refund'" in str(refused.value)
    assert refused.value.data == {"reason": "invalid_response",
                                  "requestIds": ["call_1_refund"]}
    with pytest.raises(InvalidParamsError) as not_an_approval:
        await one_task(client, message("sure", task_id=paused.id))
    assert not_an_approval.value.data["requestIds"] == ["call_1_refund"]
    still = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert still.status.state == INPUT_REQUIRED and still.metadata == paused.metadata
    assert not ledger.exists()
    done = await one_task(client, message({"approved": True}, task_id=paused.id))
    assert outputs(done) == ["Refunded 40.00 on order 1001."]
    assert len(paid(ledger)) == 1


async def test_an_approval_answered_after_a_restart_pays_once(
        start_server: Any, connect: Any, ledger: Path, tmp_path: Path) -> None:
    storage = f"file:{tmp_path / 'shared'}"
    first = start_server(SUPPORT, storage, *A2A)
    paused = await one_task(await connect(first.url), message(REFUND))
    first.stop()
    second = start_server(SUPPORT, storage, *A2A)
    client = await connect(second.url)
    read = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert read.status.state == INPUT_REQUIRED
    assert pending_of(read.status) == pending_of(paused.status)
    done = await one_task(client, message({"approved": True}, task_id=paused.id))
    assert outputs(done) == ["Refunded 40.00 on order 1001."]
    assert [e["call_id"] for e in paid(ledger)] == ["call_1_refund"]


async def test_a_streamed_pause_and_a_streamed_approval(start_server: Any,
                                                        connect: Any) -> None:
    client = await connect(start_server(SUPPORT, None, *A2A).url, streaming=True)
    events = [e async for e in client.send_message(message(REFUND))]
    assert events[0].HasField("task")
    last = events[-1].status_update
    assert last.status.state == INPUT_REQUIRED
    assert pending_of(last.status)[0]["tool"]["callId"] == "call_1_refund"
    answered = [e async for e in client.send_message(
        message({"approved": True}, task_id=last.task_id))]
    texts = [p.text for e in answered if e.HasField("artifact_update")
             for p in e.artifact_update.artifact.parts]
    assert texts == ["Refunded 40.00 on order 1001."]
    assert answered[-1].status_update.status.state == COMPLETED


async def test_a_client_tool_is_answered_with_its_result(start_server: Any,
                                                         connect: Any) -> None:
    client = await connect(start_server(CLIENT_TOOLS, None, *A2A).url)
    paused = await one_task(client, message("please call confirm_with_user"))
    (request,) = pending_of(paused.status)
    assert request["tool"] == {"kind": "client_tool_call", "toolName": "confirm_with_user",
                               "callId": "call_0_confirm_with_user",
                               "arguments": {"question": "please call confirm_with_user"}}
    done = await one_task(client, message("confirmed", task_id=paused.id))
    assert outputs(done) == ["Your confirm_with_user said: confirmed"]
