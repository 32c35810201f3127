"""GetTask, ListTasks, CancelTask and SubscribeToTask, principal isolation, and every
protocol error code from a real bad request."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a_flows import Gate
from conftest import BASE, ClientMaker, events_of, gate_follow, send, send_task, user_message

from checkflow.adapters.a2a._parts import proto_value, python_value
from checkflow.hosting import WorkflowHost

INPUT_REQUIRED = a2a_pb2.TASK_STATE_INPUT_REQUIRED
COMPLETED = a2a_pb2.TASK_STATE_COMPLETED
CANCELED = a2a_pb2.TASK_STATE_CANCELED


async def test_get_task_honours_history_length(connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask2"))
    await send_task(client, user_message(a2a_pb2.Part(data=proto_value(True)),
                                         task_id=paused.id))
    await send_task(client, user_message(a2a_pb2.Part(data=proto_value(False)),
                                         task_id=paused.id))
    full = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    users = [m for m in full.history if m.role == a2a_pb2.ROLE_USER]
    assert [m.parts[0].WhichOneof("content") for m in users] == ["text", "data", "data"]
    assert [python_value(m.parts[0].data) for m in users[1:]] == [True, False]
    last = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id, history_length=1))
    assert list(last.history) == list(full.history)[-1:]
    none = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id, history_length=0))
    assert list(none.history) == []


async def test_list_tasks_filters_pages_newest_first_and_can_drop_artifacts(
        connect: ClientMaker) -> None:
    client = await connect()
    made = [await send_task(client, user_message("hello", context_id="list-a")),
            await send_task(client, user_message("ask", context_id="list-b")),
            await send_task(client, user_message("data", context_id="list-a"))]
    listed = await client.list_tasks(a2a_pb2.ListTasksRequest(include_artifacts=True))
    assert [t.id for t in listed.tasks] == [t.id for t in reversed(made)]
    assert listed.tasks[0].artifacts
    in_a = await client.list_tasks(a2a_pb2.ListTasksRequest(context_id="list-a"))
    assert [t.id for t in in_a.tasks] == [made[2].id, made[0].id]
    assert not any(t.artifacts for t in in_a.tasks)  # includeArtifacts defaults to false
    waiting = await client.list_tasks(a2a_pb2.ListTasksRequest(status=INPUT_REQUIRED))
    assert [t.id for t in waiting.tasks] == [made[1].id]
    first = await client.list_tasks(a2a_pb2.ListTasksRequest(page_size=2))
    assert len(first.tasks) == 2 and first.total_size == 3 and first.next_page_token
    rest = await client.list_tasks(a2a_pb2.ListTasksRequest(
        page_size=2, page_token=first.next_page_token))
    assert [t.id for t in [*first.tasks, *rest.tasks]] == [t.id for t in reversed(made)]


async def test_two_principals_with_the_same_context_id_never_see_each_others_tasks(
        connect: ClientMaker) -> None:
    alice, bob = await connect("alice"), await connect("bob")
    mine = await send_task(alice, user_message("ask", context_id="same"))
    theirs = await send_task(bob, user_message("hello", context_id="same"))
    assert theirs.status.state == COMPLETED  # alice's waiting task does not block bob
    assert [t.id for t in (await bob.list_tasks(a2a_pb2.ListTasksRequest())).tasks] == [
        theirs.id]
    assert [t.id for t in (await alice.list_tasks(
        a2a_pb2.ListTasksRequest(context_id="same"))).tasks] == [mine.id]
    for call in (bob.get_task(a2a_pb2.GetTaskRequest(id=mine.id)),
                 bob.cancel_task(a2a_pb2.CancelTaskRequest(id=mine.id))):
        with pytest.raises(TaskNotFoundError):
            await call
    with pytest.raises(TaskNotFoundError):
        await send(bob, user_message("yes", task_id=mine.id))


async def test_cancelling_an_input_required_task_then_again(connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask", context_id="cancel-1"))
    canceled = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=paused.id))
    assert canceled.status.state == CANCELED
    assert (await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))).status.state == (
        CANCELED)
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(a2a_pb2.CancelTaskRequest(id=paused.id))
    with pytest.raises(UnsupportedOperationError, match="CANCELED"):
        await send(client, user_message("yes", task_id=paused.id))
    # the context is no longer blocked, and the cancelled task's turns left the
    # conversation with its request: the next task does not wait on it
    after = await send_task(client, user_message("hello", context_id="cancel-1"))
    assert after.id != paused.id and after.status.state == COMPLETED
    assert python_value(after.metadata)["checkflow"]["pendingRequestIds"] == []
    assert [p.text for a in after.artifacts for p in a.parts] == ["hello back"]


async def test_cancelling_a_working_task_stops_its_run(
        connect: ClientMaker, gate: Gate, host: WorkflowHost,
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = asyncio.Event()
    real_cancel = host.cancel

    async def cancel(*args: Any, **kwargs: Any) -> bool:
        asked.set()  # a gate on the real call, so the release never races the request
        return await real_cancel(*args, **kwargs)

    monkeypatch.setattr(host, "cancel", cancel)
    client = await connect()
    task = await send_task(client, user_message("hold", context_id="cancel-2"),
                           return_immediately=True)
    await asyncio.wait_for(gate.entered.wait(), 10)
    (listed,) = (await client.list_tasks(a2a_pb2.ListTasksRequest(context_id="cancel-2"))).tasks
    assert listed.id == task.id and listed.status.state in (a2a_pb2.TASK_STATE_SUBMITTED,
                                                           a2a_pb2.TASK_STATE_WORKING)
    cancelling = asyncio.create_task(client.cancel_task(a2a_pb2.CancelTaskRequest(id=task.id)))
    await asyncio.wait_for(asked.wait(), 10)
    gate.release.set()
    canceled = await asyncio.wait_for(cancelling, 10)
    assert canceled.status.state == CANCELED
    final = await client.get_task(a2a_pb2.GetTaskRequest(id=task.id))
    assert final.status.state == CANCELED and not final.artifacts  # "released" never came
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task.id))


async def test_subscribing_to_an_input_required_task_follows_its_continuation(
        connect: ClientMaker, host: WorkflowHost, monkeypatch: pytest.MonkeyPatch) -> None:
    client = await connect(streaming=True)
    started = (await send(client, user_message("ask")))[0].task
    paused = await client.get_task(a2a_pb2.GetTaskRequest(id=started.id))
    followed = gate_follow(host, monkeypatch)
    subscribing = asyncio.create_task(events_of(client.subscribe(
        a2a_pb2.SubscribeToTaskRequest(id=paused.id))))
    await asyncio.wait_for(followed.wait(), 10)
    (request_id,) = python_value(paused.metadata)["checkflow"]["pendingRequestIds"]
    await send_task(await connect(), user_message(
        a2a_pb2.Part(data=proto_value({request_id: True})), task_id=paused.id))
    events = await asyncio.wait_for(subscribing, 10)
    assert events[0].task.status.state == INPUT_REQUIRED
    assert [p.text for e in events if e.HasField("artifact_update")
            for p in e.artifact_update.artifact.parts] == ["published"]
    assert events[-1].status_update.status.state == COMPLETED


async def test_subscribing_to_a_terminal_or_unknown_task_is_refused(
        connect: ClientMaker) -> None:
    client = await connect(streaming=True)
    done = (await send(client, user_message("hello")))[0].task
    with pytest.raises(UnsupportedOperationError, match="COMPLETED"):
        _ = [e async for e in client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=done.id))]
    with pytest.raises(TaskNotFoundError):
        _ = [e async for e in client.subscribe(a2a_pb2.SubscribeToTaskRequest(id="nope"))]


async def test_cancel_and_get_of_an_unknown_task_are_task_not_found(
        connect: ClientMaker) -> None:
    client = await connect()
    with pytest.raises(TaskNotFoundError):
        await client.get_task(a2a_pb2.GetTaskRequest(id="missing"))
    with pytest.raises(TaskNotFoundError):
        await client.cancel_task(a2a_pb2.CancelTaskRequest(id="missing"))
    with pytest.raises(TaskNotFoundError):
        await send(client, user_message("hello", task_id="missing"))


async def rpc(app: Any, body: bytes | dict[str, Any], *, version: str | None = "1.0",
              path: str = "/a2a") -> dict[str, Any]:
    headers = {"authorization": "Bearer alice", "content-type": "application/json"}
    if version:
        headers["A2A-Version"] = version
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE,
                                 headers=headers) as http:
        if isinstance(body, bytes):
            response = await http.post(path, content=body)
        else:
            response = await http.post(path, json=body)
    assert response.status_code == 200, response.text  # JSON-RPC errors ride on 200
    result: dict[str, Any] = response.json()
    return result


def send_body(text: str = "hello", **message: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m-raw", "role": "ROLE_USER", "parts": [{"text": text}], **message}}}


@pytest.mark.parametrize(("body", "code"), [
    (b"{not json", -32700),
    ({"jsonrpc": "1.0", "id": 1, "method": "SendMessage"}, -32600),
    ({"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod", "params": {}}, -32601),
    ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x",
                                                                  "historyLength": -1}},
     -32602),
    ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}, -32001),
    (send_body(contextId="a/b"), -32602),
], ids=["parse", "invalid-request", "method", "params", "unknown-task", "bad-context-id"])
async def test_each_protocol_error_keeps_the_sdk_code(app: Any, body: Any, code: int) -> None:
    reply = await rpc(app, body)
    assert reply["error"]["code"] == code, reply


async def test_a_trailing_slash_reaches_the_same_endpoint_without_a_redirect(
        app: Any) -> None:
    reply = await rpc(app, send_body(), path="/a2a/")
    assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_request_without_a2a_version_is_0_3_and_unsupported(app: Any) -> None:
    reply = await rpc(app, send_body(), version=None)
    assert reply["error"]["code"] == -32009, reply


async def test_not_cancelable_and_terminal_task_codes(app: Any) -> None:
    done = (await rpc(app, send_body()))["result"]["task"]
    cancel = {"jsonrpc": "2.0", "id": 2, "method": "CancelTask", "params": {"id": done["id"]}}
    assert (await rpc(app, cancel))["error"]["code"] == -32002
    again = send_body(taskId=done["id"])
    again["params"]["message"]["messageId"] = "m-raw-2"  # not a retry of the first message
    assert (await rpc(app, again))["error"]["code"] == -32004
