"""Issue 29: a request that takes ``A2AMessage`` gets the whole continuation (ids, every part,
files included, metadata), its history lists every continuation; a file part elsewhere, or
over the body or record limits, is refused naming what was wrong; a final ``A2AMessage`` is
the COMPLETED status message. Every test runs over JSON-RPC and REST."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidRequestError
from a2a_message_flows import build_collector
from conftest import (
    ClientMaker,
    authenticate,
    events_of,
    gate_follow,
    send,
    send_task,
    user_message,
)

from checkflow.adapters.a2a import A2AAdapter, A2AMessage
from checkflow.adapters.a2a._parts import proto_value, python_value, takes_message
from checkflow.hosting import WorkflowHost, create_app
from checkflow.sessions import FileSessionStore
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import Workflow

INPUT_REQUIRED = a2a_pb2.TASK_STATE_INPUT_REQUIRED
COMPLETED = a2a_pb2.TASK_STATE_COMPLETED
SCAN = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


@pytest.fixture
def workflow() -> Workflow:
    return build_collector()


def pending_of(task: a2a_pb2.Task) -> list[dict[str, Any]]:
    (data,) = [python_value(p.data) for p in task.status.message.parts
               if p.WhichOneof("content") == "data"]
    return list(data["pendingRequests"])


def with_files(task: a2a_pb2.Task, raw: bytes = SCAN, note: str = "here it is"
               ) -> a2a_pb2.Message:
    """A continuation with a text, a data, a raw file and a URL file part, and metadata."""
    message = user_message(
        note, a2a_pb2.Part(data=proto_value({"pages": 2})),
        a2a_pb2.Part(raw=raw, filename="scan.png", media_type="image/png",
                     metadata={"scanner": "flatbed"}),
        a2a_pb2.Part(url="https://files.example.com/scan.pdf", filename="scan.pdf",
                     media_type="application/pdf"),
        task_id=task.id)
    message.metadata.update({"trace": "t-1"})
    return message


def outputs(task: a2a_pb2.Task) -> list[Any]:
    """Each artifact's first part, as a value."""
    values: list[Any] = []
    for artifact in task.artifacts:
        part = artifact.parts[0]
        values.append(python_value(part.data) if part.WhichOneof("content") == "data"
                      else part.text)
    return values


def status_text(task: a2a_pb2.Task) -> list[str]:
    return [p.text for p in task.status.message.parts if p.text]


async def test_a_request_for_an_a2a_message_gets_the_whole_continuation(
        connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message("collect"))
    assert paused.status.state == INPUT_REQUIRED
    (request,) = pending_of(paused)
    assert request["takesMessage"] is True and request["data"] == {
        "question": "send me the file"}
    assert request["responseSchema"] == {
        "description": "the whole next A2A message sent with this taskId answers this "
                       "request: any parts, files included"}
    assert status_text(paused) == [f"waiting for a message: send it with this taskId (any "
                                   f"parts, files included) to answer request "
                                   f"{request['requestId']}"]
    answer = with_files(paused)
    done = await send_task(client, answer)
    assert done.status.state == COMPLETED
    assert outputs(done)[0] == {
        "message_id": answer.message_id, "task_id": paused.id,
        "context_id": paused.context_id, "role": "user", "metadata": {"trace": "t-1"},
        "parts": [
            {"kind": "text", "text": "here it is", "data": None, "raw": None, "url": None,
             "filename": None, "media_type": None, "metadata": {}},
            {"kind": "data", "text": None, "data": {"pages": 2}, "raw": None, "url": None,
             "filename": None, "media_type": None, "metadata": {}},
            {"kind": "file", "text": None, "data": None, "raw": len(SCAN), "url": None,
             "filename": "scan.png", "media_type": "image/png",
             "metadata": {"scanner": "flatbed"}},
            {"kind": "file", "text": None, "data": None, "raw": None,
             "url": "https://files.example.com/scan.pdf", "filename": "scan.pdf",
             "media_type": "application/pdf", "metadata": {}}]}


async def test_history_lists_every_continuation_in_order_and_survives_a_restart(
        connect: ClientMaker, stores: tuple[FileSessionStore, FileCheckpointStorage],
        workflow: Workflow) -> None:
    client, streaming = await connect(), await connect(streaming=True)
    first = user_message("collect:3")
    task = await send_task(client, first)
    sent = [first]
    for number in range(3):
        answer = with_files(task, raw=SCAN[:100 + number], note=f"answer {number}")
        sent.append(answer)
        if number == 1:  # one continuation streamed: its history is the same
            events = await send(streaming, answer)
            assert events[0].HasField("task")
            task = await client.get_task(a2a_pb2.GetTaskRequest(id=task.id))
        else:
            task = await send_task(client, answer)
    assert task.status.state == COMPLETED and status_text(task) == ["got 3 message(s)"]
    users = [m for m in task.history if m.role == a2a_pb2.ROLE_USER]
    assert [m.message_id for m in users] == [m.message_id for m in sent]
    assert [m.parts[2].raw for m in users[1:]] == [SCAN[:100], SCAN[:101], SCAN[:102]]
    assert [python_value(m.metadata) for m in users[1:]] == [{"trace": "t-1"}] * 3
    # the agent's questions of its earlier pauses stand between them
    assert [m.role for m in task.history] == [a2a_pb2.ROLE_USER, a2a_pb2.ROLE_AGENT] * 3 + [
        a2a_pb2.ROLE_USER]
    # a new process on the same stores shows the same task
    again = WorkflowHost(workflow, session_store=stores[0], checkpoint_storage=stores[1])
    fresh = await connect(target=create_app(again, adapters=[A2AAdapter()],
                                            authenticate=authenticate))
    reread = await fresh.get_task(a2a_pb2.GetTaskRequest(id=task.id))
    assert list(reread.history) == list(task.history)
    assert reread.status.message == task.status.message


async def test_a_file_part_to_a_request_that_cannot_take_it_says_what_it_takes(
        connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask"))
    (request,) = pending_of(paused)
    assert "takesMessage" not in request
    with pytest.raises(ContentTypeNotSupportedError) as refused:
        await send_task(client, with_files(paused))
    text = str(refused.value)
    assert f'{request["requestId"]} takes JSON Schema {{"type":"boolean"}}' in text
    assert "checkflow.adapters.a2a.A2AMessage" in text
    assert refused.value.data == {"reason": "file_part_not_accepted",
                                  "requestIds": [request["requestId"]]}
    still = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert (still.status.state, python_value(still.metadata)) == (
        INPUT_REQUIRED, python_value(paused.metadata))
    done = await send_task(client, user_message(a2a_pb2.Part(data=proto_value(True)),
                                                task_id=paused.id))
    assert outputs(done) == ["published"]


async def test_with_two_requests_waiting_a_file_waits_for_the_message_request_alone(
        connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message("two"))
    by_kind = {bool(r.get("takesMessage")): r["requestId"] for r in pending_of(paused)}
    with pytest.raises(ContentTypeNotSupportedError) as refused:
        await send_task(client, with_files(paused))
    assert "the whole message (A2AMessage), when it is the only request waiting" in str(
        refused.value)
    assert refused.value.data["requestIds"] == [r["requestId"] for r in pending_of(paused)]
    # answer the bool one by id: the message request is then the only one waiting
    half = await send_task(client, user_message(
        a2a_pb2.Part(data=proto_value({by_kind[False]: True})), task_id=paused.id))
    assert [r["requestId"] for r in pending_of(half)] == [by_kind[True]]
    done = await send_task(client, with_files(half))
    assert done.status.state == COMPLETED
    assert outputs(done)[:2] == ["published", outputs(done)[1]]
    assert outputs(done)[1]["parts"][2]["raw"] == len(SCAN)


async def test_a_file_over_the_body_limit_is_refused_naming_the_limit(
        host: WorkflowHost, connect: ClientMaker) -> None:
    app = create_app(host, adapters=[A2AAdapter()], authenticate=authenticate,
                     max_body_bytes=64 * 1024)
    client = await connect(target=app)
    paused = await send_task(client, user_message("collect"))
    with pytest.raises(InvalidRequestError) as refused:
        await send_task(client, with_files(paused, raw=b"x" * (80 * 1024)))
    assert "larger than 65536 bytes" in str(refused.value)
    assert refused.value.data == {"reason": "body_too_large", "limit": 65536}
    still = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert still.status.state == INPUT_REQUIRED
    done = await send_task(client, with_files(paused, raw=b"x" * 1024))
    assert done.status.state == COMPLETED


async def test_a_file_over_the_record_limit_is_refused_naming_size_and_limit(
        workflow: Workflow, stores: tuple[FileSessionStore, FileCheckpointStorage],
        connect: ClientMaker) -> None:
    small = WorkflowHost(workflow, session_store=stores[0], checkpoint_storage=stores[1],
                         max_record_bytes=32 * 1024)
    client = await connect(target=create_app(small, adapters=[A2AAdapter()],
                                             authenticate=authenticate))
    paused = await send_task(client, user_message("collect"))
    with pytest.raises(InvalidRequestError) as refused:
        await send_task(client, with_files(paused, raw=b"x" * (40 * 1024)))
    data = refused.value.data
    assert data["reason"] == "record_too_large" and data["limit"] == 32 * 1024
    assert data["size"] > 40 * 1024
    still = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert still.status.state == INPUT_REQUIRED


def test_a_request_takes_the_whole_message_when_its_type_may_be_one() -> None:
    assert takes_message(A2AMessage) and takes_message(A2AMessage | str)
    assert not takes_message(bool) and not takes_message(None) and not takes_message(str)


# -- a final A2AMessage is the COMPLETED status message ---------------------------------------

def assert_report(task: a2a_pb2.Task) -> None:
    assert task.status.state == COMPLETED
    message = task.status.message
    assert message.role == a2a_pb2.ROLE_AGENT and message.message_id == f"{task.id}-r0-status"
    assert (message.task_id, message.context_id) == (task.id, task.context_id)
    assert status_text(task) == ["done: see the report"]
    assert python_value(message.parts[1].data) == {"rows": 3}
    assert python_value(message.metadata) == {"summary": True}
    # artifacts stay artifacts (the message too: a stream sent it as it came)
    assert [a.name for a in task.artifacts] == ["report", ""]
    assert outputs(task) == ["figures", "done: see the report"]


async def test_a_final_a2a_message_is_the_completed_status_message_everywhere(
        connect: ClientMaker, stores: tuple[FileSessionStore, FileCheckpointStorage],
        workflow: Workflow) -> None:
    client = await connect()
    blocking = await send_task(client, user_message("report"))
    assert_report(blocking)
    events = await send(await connect(streaming=True), user_message("report"))
    final = events[-1].status_update
    assert final.status.state == COMPLETED
    streamed = await client.get_task(a2a_pb2.GetTaskRequest(id=final.task_id))
    assert final.status.message == streamed.status.message
    assert_report(streamed)
    listed = await client.list_tasks(a2a_pb2.ListTasksRequest(include_artifacts=True))
    assert {t.id: t.status.message for t in listed.tasks} == {
        blocking.id: blocking.status.message, streamed.id: streamed.status.message}
    again = WorkflowHost(workflow, session_store=stores[0], checkpoint_storage=stores[1])
    fresh = await connect(target=create_app(again, adapters=[A2AAdapter()],
                                            authenticate=authenticate))
    reread = await fresh.get_task(a2a_pb2.GetTaskRequest(id=blocking.id))
    assert reread.status == blocking.status
    assert_report(reread)


async def test_a_continuation_ending_in_a_message_completes_with_it_and_others_have_none(
        connect: ClientMaker) -> None:
    client = await connect()
    paused = await send_task(client, user_message("collect"))
    done = await send_task(client, with_files(paused))
    assert status_text(done) == ["got 1 message(s)"]
    assert done.status.message.message_id == f"{done.id}-r1-status"
    assert python_value(done.status.message.metadata) == {"got": 1}
    plain = await send_task(client, user_message("plain"))
    assert plain.status.state == COMPLETED and not plain.status.HasField("message")


async def test_a_subscriber_sees_the_whole_message_answer_and_the_completed_message(
        connect: ClientMaker, host: WorkflowHost, monkeypatch: pytest.MonkeyPatch) -> None:
    client = await connect()
    paused = await send_task(client, user_message("collect"))
    followed = gate_follow(host, monkeypatch)
    following = asyncio.create_task(events_of((await connect(streaming=True)).subscribe(
        a2a_pb2.SubscribeToTaskRequest(id=paused.id))))
    await asyncio.wait_for(followed.wait(), 10)
    done = await send_task(client, with_files(paused))
    events = await asyncio.wait_for(following, 30)
    assert events[0].task.status.state == INPUT_REQUIRED
    final = events[-1].status_update
    assert final.status.state == COMPLETED
    assert final.status.message == done.status.message
    assert [p.text for p in final.status.message.parts] == ["got 1 message(s)"]
