"""Tasks are the checkpoint's turns: GetTask and ListTasks after a native answer, a native
DELETE, a restart; listing order, paging and its tokens; no record kept beside the
checkpoint; task ids that name their context and first message."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from a2a_flows import build
from conftest import BASE, ClientMaker, make_app, send_task, user_message

from checkflow.adapters.a2a._ids import parse_task_id, task_id_for
from checkflow.adapters.a2a._parts import python_value
from checkflow.hosting import WorkflowHost

COMPLETED = a2a_pb2.TASK_STATE_COMPLETED
INPUT_REQUIRED = a2a_pb2.TASK_STATE_INPUT_REQUIRED


def native(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE,
                             headers={"authorization": "Bearer alice"})


def test_a_task_id_names_its_context_and_first_message_and_nothing_else() -> None:
    task_id = task_id_for("ctx/odd \u00e9", "m-1")
    assert parse_task_id(task_id) == ("ctx/odd \u00e9", "m-1")
    for foreign in ("", "abc", "t-", "t-!!!", task_id_for("c", "m")[:-3] + "A",
                    "t-" + "W10"):  # [] is no pair
        assert parse_task_id(foreign) is None


async def test_an_unknown_or_foreign_task_id_is_task_not_found(connect: ClientMaker) -> None:
    client = await connect()
    done = await send_task(client, user_message("hello", context_id="v-known"))
    for task_id in ("plain", task_id_for("v-known", "never-sent"), task_id_for("nope", "m")):
        with pytest.raises(TaskNotFoundError):
            await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
    with pytest.raises(TaskNotFoundError):  # another principal's id is unknown too
        await (await connect("bob")).get_task(a2a_pb2.GetTaskRequest(id=done.id))


async def test_no_record_is_kept_beside_the_checkpoint(connect: ClientMaker,
                                                       host: WorkflowHost) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask", context_id="v-none"))
    (rid,) = python_value(paused.metadata)["checkflow"]["pendingRequestIds"]
    records = host.records("a2a")
    for key in (f"task/{paused.id}", "index", 'tasks:["all","","head"]'):
        assert await records.get(key, principal="alice") is None
    (turn, ) = await host.turns("v-none", principal="alice")
    assert turn.protocol == "a2a" and turn.data["task_id"] == paused.id
    assert turn.idempotency_key == paused.history[0].message_id
    assert rid in turn.pending_requests


async def test_a_native_delete_leaves_no_task_behind(connect: ClientMaker, app: Any) -> None:
    client = await connect()
    done = await send_task(client, user_message("hello", context_id="v-delete"))
    async with native(app) as http:
        assert (await http.delete("/v1/conversations/v-delete")).status_code == 204
    with pytest.raises(TaskNotFoundError):
        await client.get_task(a2a_pb2.GetTaskRequest(id=done.id))
    listed = await client.list_tasks(a2a_pb2.ListTasksRequest(context_id="v-delete"))
    assert list(listed.tasks) == []
    # the same message id starts afresh: nothing of the deleted task is replayed
    again = await send_task(client, user_message("data", context_id="v-delete"))
    assert again.status.state == COMPLETED


async def test_a_restarted_host_serves_the_same_tasks(connect: ClientMaker,
                                                      stores: Any) -> None:
    def app() -> Any:
        return make_app(WorkflowHost(build(), session_store=stores[0],
                                     checkpoint_storage=stores[1]))

    first = await connect(target=app())
    made = [await send_task(first, user_message("hello", context_id="v-restart")),
            await send_task(first, user_message("ask", context_id="v-restart"))]
    later = await connect(target=app())
    listed = await later.list_tasks(a2a_pb2.ListTasksRequest(include_artifacts=True))
    assert [(t.id, t.status.state) for t in listed.tasks] == [
        (made[1].id, INPUT_REQUIRED), (made[0].id, COMPLETED)]
    got = await later.get_task(a2a_pb2.GetTaskRequest(id=made[0].id))
    assert [p.text for a in got.artifacts for p in a.parts] == ["hello back"]
    assert [m.message_id for m in got.history] == [made[0].history[0].message_id]


async def test_listing_pages_newest_first_each_task_once(connect: ClientMaker) -> None:
    client = await connect()
    made = [await send_task(client, user_message("hello", context_id=f"v-page-{i % 2}"))
            for i in range(5)]
    seen: list[str] = []
    token = ""
    for _ in range(5):
        page = await client.list_tasks(a2a_pb2.ListTasksRequest(page_size=2,
                                                                page_token=token))
        assert page.total_size == 5
        seen.extend(t.id for t in page.tasks)
        token = page.next_page_token
        if not token:
            break
    assert seen == [t.id for t in reversed(made)]
    in_one = await client.list_tasks(a2a_pb2.ListTasksRequest(context_id="v-page-1"))
    assert [t.id for t in in_one.tasks] == [made[3].id, made[1].id]


@pytest.mark.parametrize("token", ["not base64 !", "e30", "eyJhZnRlciI6IDF9"],
                         ids=["garbage", "empty-object", "wrong-shape"])
async def test_a_malformed_page_token_is_invalid_params(connect: ClientMaker,
                                                        token: str) -> None:
    with pytest.raises(InvalidParamsError, match="invalid page token"):
        await (await connect()).list_tasks(a2a_pb2.ListTasksRequest(page_token=token))


async def test_a_page_token_of_another_query_is_invalid_params(connect: ClientMaker) -> None:
    client = await connect()
    for _ in range(3):
        await send_task(client, user_message("hello", context_id="v-query"))
    page = await client.list_tasks(a2a_pb2.ListTasksRequest(page_size=1))
    with pytest.raises(InvalidParamsError, match="another query"):
        await client.list_tasks(a2a_pb2.ListTasksRequest(
            page_size=1, page_token=page.next_page_token, context_id="v-query"))


async def test_filters_by_status_and_time(connect: ClientMaker) -> None:
    client = await connect()
    done = await send_task(client, user_message("hello", context_id="v-f1"))
    paused = await send_task(client, user_message("ask", context_id="v-f2"))
    waiting = await client.list_tasks(a2a_pb2.ListTasksRequest(status=INPUT_REQUIRED))
    assert [t.id for t in waiting.tasks] == [paused.id] and waiting.total_size == 1
    after = a2a_pb2.ListTasksRequest()
    after.status_timestamp_after.CopyFrom(paused.status.timestamp)
    assert [t.id for t in (await client.list_tasks(after)).tasks] == [paused.id]
    assert done.id not in [t.id for t in (await client.list_tasks(after)).tasks]


@pytest.mark.parametrize(("word", "state", "text"), [
    ("boom", a2a_pb2.TASK_STATE_FAILED, "exploded"),
    ("reject", a2a_pb2.TASK_STATE_REJECTED, "I do not do that"),
], ids=["failed", "rejected"])
async def test_a_failed_or_rejected_task_reads_back_as_it_was_answered(
        connect: ClientMaker, word: str, state: int, text: str) -> None:
    client = await connect()
    answered = await send_task(client, user_message(word, context_id=f"v-{word}"))
    got = await client.get_task(a2a_pb2.GetTaskRequest(id=answered.id))
    assert answered.status.state == got.status.state == state
    assert text in got.status.message.parts[0].text
    assert got.status.timestamp == answered.status.timestamp
    # the context goes on from its last good head
    after = await send_task(client, user_message("hello", context_id=f"v-{word}"))
    assert after.status.state == COMPLETED


@pytest.mark.parametrize("word", ["hello", "data", "file", "chunks", "message", "ask"])
async def test_what_send_answers_is_what_get_task_reads(connect: ClientMaker,
                                                        word: str) -> None:
    client = await connect()
    answered = await send_task(client, user_message(word))
    got = await client.get_task(a2a_pb2.GetTaskRequest(id=answered.id))
    assert (got.status.state, got.status.timestamp) == (answered.status.state,
                                                       answered.status.timestamp)
    assert list(got.artifacts) == list(answered.artifacts)
    assert python_value(got.metadata) == python_value(answered.metadata)
    assert [p.text for p in got.status.message.parts] == [
        p.text for p in answered.status.message.parts]
    assert [m.message_id for m in got.history if m.role == a2a_pb2.ROLE_USER] == [
        m.message_id for m in answered.history if m.role == a2a_pb2.ROLE_USER]


async def test_a_native_cancel_of_a_running_task_is_its_cancel(
        connect: ClientMaker, app: Any, gate: Any) -> None:
    client = await connect()
    task = await send_task(client, user_message("hold", context_id="v-ncancel"),
                           return_immediately=True)
    await asyncio.wait_for(gate.entered.wait(), 10)
    async with native(app) as http:
        cancelled = await http.post("/v1/conversations/v-ncancel/cancel")
    gate.release.set()
    assert cancelled.status_code in (200, 202), cancelled.text
    for _ in range(500):  # bounded: the turn ends at its next safe point
        got = await client.get_task(a2a_pb2.GetTaskRequest(id=task.id))
        if got.status.state not in (a2a_pb2.TASK_STATE_SUBMITTED, a2a_pb2.TASK_STATE_WORKING):
            break
        await asyncio.sleep(0.01)
    assert got.status.state == a2a_pb2.TASK_STATE_CANCELED and list(got.artifacts) == []


async def test_a_native_branch_leaves_the_other_line_s_task_readable_but_unlisted(
        connect: ClientMaker, app: Any, host: WorkflowHost) -> None:
    client = await connect()
    first = await send_task(client, user_message("hello", context_id="v-nbranch"))
    second = await send_task(client, user_message("data", context_id="v-nbranch"))
    (turn, _) = await host.turns("v-nbranch", principal="alice")
    async with native(app) as http:
        branched = await http.post("/v1/conversations/v-nbranch/runs", json={
            "message": "again", "from_snapshot": turn.last_snapshot_id})
    assert branched.status_code == 200, branched.text
    listed = await client.list_tasks(a2a_pb2.ListTasksRequest(context_id="v-nbranch"))
    assert [t.id for t in listed.tasks] == [first.id]  # the lineage's A2A tasks
    other = await client.get_task(a2a_pb2.GetTaskRequest(id=second.id))
    assert other.status.state == COMPLETED  # off the line, as it was
    assert python_value(other.artifacts[0].parts[0].data) == python_value(
        second.artifacts[0].parts[0].data)
