"""Pause and continue: input-required with the requests, continuing by taskId (after a restart
and from a second host on the same stores), the waiting-task rule, races, and the native API
answering a context paused over A2A."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from a2a_flows import Gate, build
from conftest import BASE, ClientMaker, make_app, send, send_task, user_message

from checkflow.adapters.a2a._parts import proto_value, python_value
from checkflow.hosting import WorkflowHost

INPUT_REQUIRED = a2a_pb2.TASK_STATE_INPUT_REQUIRED
COMPLETED = a2a_pb2.TASK_STATE_COMPLETED


def pending_of(task: a2a_pb2.Task) -> list[dict[str, Any]]:
    data = [python_value(p.data) for p in task.status.message.parts
            if p.WhichOneof("content") == "data"]
    return list(data[0]["pendingRequests"])


def answer(task: a2a_pb2.Task, value: Any, *, with_context: bool = True) -> a2a_pb2.Message:
    (request,) = pending_of(task)
    return user_message(a2a_pb2.Part(data=proto_value({request["requestId"]: value})),
                        task_id=task.id, context_id=task.context_id if with_context else None)


async def test_a_pause_is_input_required_with_the_requests_and_the_resume_token(
        connect: ClientMaker) -> None:
    task = await send_task(await connect(), user_message("ask", context_id="c-ask"))
    assert task.status.state == INPUT_REQUIRED
    (request,) = pending_of(task)
    assert request["data"] == {"question": "publish?"}
    assert request["responseSchema"] == {"type": "boolean"}
    meta = python_value(task.metadata)["checkflow"]
    assert meta["pendingRequestIds"] == [request["requestId"]]
    assert meta["resumeToken"]["snapshotId"] and meta["conversationId"] == "c-ask"


@pytest.mark.parametrize("with_context", [True, False], ids=["with-context", "task-only"])
async def test_continuing_the_task_by_id_completes_it(connect: ClientMaker,
                                                      with_context: bool) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask"))
    done = await send_task(client, answer(paused, True, with_context=with_context))
    assert (done.id, done.context_id, done.status.state) == (paused.id, paused.context_id,
                                                             COMPLETED)
    assert [p.text for a in done.artifacts for p in a.parts] == ["published"]
    assert python_value(done.metadata)["checkflow"]["resumeToken"] is None
    users = [m for m in done.history if m.role == a2a_pb2.ROLE_USER]
    assert [m.message_id for m in users] == [paused.history[0].message_id,
                                             users[1].message_id]
    assert len(users) == 2


async def test_a_pause_twice_is_input_required_again_then_completed(
        connect: ClientMaker) -> None:
    client = await connect(streaming=True)
    first = await send(client, user_message("ask2"))
    assert first[-1].status_update.status.state == INPUT_REQUIRED
    paused = await client.get_task(a2a_pb2.GetTaskRequest(id=first[0].task.id))
    # with one request pending, a bare data value answers it
    again = await send_task(await connect(), user_message(
        a2a_pb2.Part(data=proto_value(True)), task_id=paused.id))
    assert again.status.state == INPUT_REQUIRED and pending_of(again)[0]["data"] == {
        "question": "really publish?"}
    done = await send_task(await connect(), answer(again, False))
    assert done.status.state == COMPLETED
    assert [p.text for a in done.artifacts for p in a.parts] == ["dropped"]


async def test_a_continuation_survives_a_restart_and_a_second_host_on_the_same_stores(
        connect: ClientMaker, stores: Any) -> None:
    first_host = WorkflowHost(build(), session_store=stores[0], checkpoint_storage=stores[1])
    paused = await send_task(await connect(target=make_app(first_host)), user_message("ask"))
    # a fresh host and app on the same files: a restart, or another replica
    second = make_app(WorkflowHost(build(), session_store=stores[0],
                                   checkpoint_storage=stores[1]))
    client = await connect(target=second)
    read = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert read.status.state == INPUT_REQUIRED
    done = await send_task(client, answer(paused, True))
    assert done.status.state == COMPLETED
    again = await connect(target=make_app(first_host))
    assert (await again.get_task(a2a_pb2.GetTaskRequest(id=paused.id))).status.state \
        == COMPLETED


async def test_an_answer_for_an_unknown_request_is_invalid_params_and_keeps_the_task(
        connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask"))
    wrong = user_message(a2a_pb2.Part(data=proto_value({"nope": True, pending_of(paused)[0][
        "requestId"]: True})), task_id=paused.id)
    with pytest.raises(InvalidParamsError, match="nope"):
        await send(client, wrong)
    with pytest.raises(InvalidParamsError, match="must be bool"):
        await send(client, answer(paused, "not a bool"))
    still = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert still.status.state == INPUT_REQUIRED and pending_of(still) == pending_of(paused)
    assert (await send_task(client, answer(paused, True))).status.state == COMPLETED


async def test_a_new_task_in_the_same_context_continues_the_same_checkpoint(
        connect: ClientMaker, host: WorkflowHost) -> None:
    client = await connect()
    one = await send_task(client, user_message("hello", context_id="shared"))
    checkpoint, _ = await host.get_checkpoint("shared", principal="alice")
    before = len(checkpoint.snapshots)
    two = await send_task(client, user_message("data", context_id="shared"))
    assert one.id != two.id and one.context_id == two.context_id == "shared"
    again, _ = await host.get_checkpoint("shared", principal="alice")
    assert again.checkpoint_id == checkpoint.checkpoint_id
    assert len(again.snapshots) > before


async def test_a_new_message_while_a_task_awaits_input_is_refused_naming_it(
        connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask", context_id="waiting"))
    with pytest.raises(UnsupportedOperationError, match=paused.id):
        await send(client, user_message("hello", context_id="waiting"))
    still = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert still.status.state == INPUT_REQUIRED and pending_of(still) == pending_of(paused)
    listed = await client.list_tasks(a2a_pb2.ListTasksRequest(context_id="waiting"))
    assert [t.id for t in listed.tasks] == [paused.id]


async def test_a_busy_context_is_refused_at_once(connect: ClientMaker, gate: Gate) -> None:
    client = await connect()
    held = asyncio.create_task(send(client, user_message("hold", context_id="busy")))
    await asyncio.wait_for(gate.entered.wait(), 10)
    with pytest.raises(UnsupportedOperationError, match="busy"):
        await send(await connect(), user_message("hello", context_id="busy"))
    gate.release.set()
    (response,) = await asyncio.wait_for(held, 10)
    assert response.task.status.state == COMPLETED
    listed = await client.list_tasks(a2a_pb2.ListTasksRequest(context_id="busy"))
    assert [t.id for t in listed.tasks] == [response.task.id]  # the refused one left nothing


async def test_of_two_concurrent_continuations_exactly_one_wins(
        connect: ClientMaker, gate: Gate) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask"))
    gate.answer_release = asyncio.Event()
    first = asyncio.create_task(send(client, answer(paused, True)))
    await asyncio.wait_for(gate.answer_entered.wait(), 10)
    with pytest.raises(UnsupportedOperationError):
        await send(await connect(), answer(paused, False))
    gate.answer_release.set()
    (won,) = await asyncio.wait_for(first, 10)
    assert won.task.status.state == COMPLETED
    assert [p.text for a in won.task.artifacts for p in a.parts] == ["published"]
    with pytest.raises(UnsupportedOperationError, match="COMPLETED"):
        await send(client, answer(paused, False))


async def test_a_context_paused_over_a2a_is_answered_through_the_native_api(
        connect: ClientMaker, app: Any) -> None:
    paused = await send_task(await connect(), user_message("ask", context_id="native-1"))
    (request,) = pending_of(paused)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE,
                                 headers={"authorization": "Bearer alice"}) as http:
        seen = (await http.get("/v1/conversations/native-1")).json()
        assert request["requestId"] in {r["request_id"] for r in seen["pending_requests"]}
        done = await http.post("/v1/conversations/native-1/runs",
                               json={"responses": {request["requestId"]: True}})
    assert done.status_code == 200, done.text
    assert done.json()["outputs"] == ["published"]


async def test_a_task_answered_through_the_native_api_no_longer_blocks_its_context(
        connect: ClientMaker, app: Any) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask", context_id="native-2"))
    (request,) = pending_of(paused)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE,
                                 headers={"authorization": "Bearer alice"}) as http:
        answered = await http.post("/v1/conversations/native-2/runs",
                                   json={"responses": {request["requestId"]: True}})
    assert answered.status_code == 200, answered.text
    # the native answer continues the task: the task shows it, and a late reply is refused
    done = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert done.status.state == COMPLETED
    assert [p.text for a in done.artifacts for p in a.parts] == ["published"]
    with pytest.raises(UnsupportedOperationError, match="already answered") as late:
        await send(client, answer(paused, False))
    assert (late.value.data or {}).get("reason") == "already_answered"
    assert (await send_task(client, user_message("hello", context_id="native-2"))
            ).status.state == COMPLETED


async def test_a_task_id_of_another_context_is_refused_and_the_task_kept(
        connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask", context_id="ctx-own"))
    wrong = answer(paused, True)
    wrong.context_id = "ctx-other"
    with pytest.raises(InvalidParamsError, match="does not match"):
        await send(client, wrong)
    still = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert still.status.state == INPUT_REQUIRED and still.context_id == "ctx-own"


async def test_a_streamed_pause_ends_the_stream_at_input_required(
        connect: ClientMaker) -> None:
    events = await send(await connect(streaming=True), user_message("ask"))
    assert [e.WhichOneof("payload") for e in events] == ["task", "status_update",
                                                         "status_update"]
    assert events[-1].status_update.status.state == INPUT_REQUIRED
    assert pending_of(a2a_pb2.Task(status=events[-1].status_update.status))[0]["data"] == {
        "question": "publish?"}
