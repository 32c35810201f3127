"""Issue 27 in process (both bindings): every A2A view is the checkpoint's, every turn once.

A cancelled pause leaves no request behind, a start taking ``A2AMessage`` has its task before
its first output,
a retried ``messageId`` replays without running a handler (after a restart too), a reply to
an answered request is refused, and a branch is only ever explicit
(``metadata.checkflow.fromSnapshot``). The server-process versions (kills, a second server,
SIGTERM) and the ones that read a stream while it is open (``httpx.ASGITransport`` hands a
response over only once it is complete) are in ``tests/e2e/test_a2a_truth_e2e.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from a2a_flows import Gate, build, build_whole_message
from conftest import ClientMaker, make_app, send, send_task, user_message

from checkflow.adapters.a2a._follow import follow_task
from checkflow.adapters.a2a._parts import proto_value, python_value
from checkflow.adapters.a2a._store import A2ATaskStore
from checkflow.hosting import WorkflowHost

INPUT_REQUIRED = a2a_pb2.TASK_STATE_INPUT_REQUIRED
COMPLETED = a2a_pb2.TASK_STATE_COMPLETED
CANCELED = a2a_pb2.TASK_STATE_CANCELED
LIVE = (a2a_pb2.TASK_STATE_SUBMITTED, a2a_pb2.TASK_STATE_WORKING)


def meta(task: a2a_pb2.Task) -> dict[str, Any]:
    found = python_value(task.metadata).get("checkflow", {}) if task.HasField(
        "metadata") else {}
    assert isinstance(found, dict)
    return found


def request_id(task: a2a_pb2.Task) -> str:
    (rid,) = meta(task)["pendingRequestIds"]
    return str(rid)


def answer(task: a2a_pb2.Task, value: Any, *, rid: str | None = None,
           message_id: str | None = None) -> a2a_pb2.Message:
    message = user_message(a2a_pb2.Part(data=proto_value({rid or request_id(task): value})),
                           task_id=task.id)
    if message_id:
        message.message_id = message_id
    return message


def texts(task: a2a_pb2.Task) -> list[str]:
    return [p.text for a in task.artifacts for p in a.parts if p.text]


async def test_cancelling_an_input_required_task_leaves_no_request_behind(
        connect: ClientMaker, host: WorkflowHost) -> None:
    client = await connect()
    before = await send_task(client, user_message("data", context_id="t-cancel"))
    paused = await send_task(client, user_message("ask", context_id="t-cancel"))
    assert (await client.cancel_task(a2a_pb2.CancelTaskRequest(id=paused.id))
            ).status.state == CANCELED
    state = await host.get_conversation("t-cancel", principal="alice")
    assert dict(state.pending_requests) == {}  # the head is back where the task started
    assert (await client.get_task(a2a_pb2.GetTaskRequest(id=before.id))).status.state == (
        COMPLETED)
    after = await send_task(client, user_message("hello", context_id="t-cancel"))
    assert (after.status.state, texts(after), meta(after)["pendingRequestIds"]) == (
        COMPLETED, ["hello back"], [])


async def test_a_task_of_a_start_taking_a2a_message_exists_before_its_first_output(
        connect: ClientMaker, stores: Any) -> None:
    gate = Gate()
    app = make_app(WorkflowHost(build_whole_message(gate), session_store=stores[0],
                                checkpoint_storage=stores[1]))
    client = await connect(target=app)
    sending = asyncio.create_task(send_task(client, user_message("hold", context_id="t-whole"),
                                            return_immediately=True))
    try:
        await asyncio.wait_for(gate.entered.wait(), 10)  # held before its first output
        await asyncio.wait({sending}, timeout=5.0)
        assert sending.done(), "SendMessage did not return before the first output"
        task = sending.result()
        assert task.status.state in LIVE
        assert (await client.get_task(a2a_pb2.GetTaskRequest(id=task.id))
                ).status.state in LIVE
        assert (await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task.id))
                ).status.state == CANCELED
    finally:
        gate.release.set()
        await asyncio.wait({sending}, timeout=10.0)
        await settled(client, sending)
    final = await client.get_task(a2a_pb2.GetTaskRequest(id=task.id))
    assert final.status.state == CANCELED and texts(final) == []


async def settled(client: Any, sending: asyncio.Task[a2a_pb2.Task]) -> None:
    """Wait (bounded) until the sent task's run has ended, so no run outlives its test."""
    if not sending.done() or sending.exception() is not None:
        return
    for _ in range(1000):
        got = await client.get_task(a2a_pb2.GetTaskRequest(id=sending.result().id))
        if got.status.state not in LIVE:
            return
        await asyncio.sleep(0.01)


async def test_a_retried_message_id_replays_its_task_after_a_restart_too(
        connect: ClientMaker, stores: Any) -> None:
    gate = Gate()

    def app() -> Any:  # a fresh host on the same stores: a restart
        return make_app(WorkflowHost(build(gate), session_store=stores[0],
                                     checkpoint_storage=stores[1]))

    client = await connect(target=app())
    first = user_message("hello", context_id="t-retry")
    done = await send_task(client, first)
    assert (await send_task(client, first)).id == done.id
    paused = await send_task(client, user_message("ask", context_id="t-retry"))
    reply = answer(paused, True, message_id="t-retry-answer")
    answered = await send_task(client, reply)
    again = await send_task(client, reply)
    assert (again.id, again.status.state, texts(again)) == (paused.id, COMPLETED,
                                                            texts(answered))
    restarted = await connect(target=app())
    late = await send_task(restarted, first)
    assert (late.id, texts(late)) == (done.id, ["hello back"])
    assert (await send_task(restarted, reply)).id == paused.id
    assert (gate.runs["hello"], gate.runs["ask"], gate.runs["answer"]) == (1, 1, 1)
    listed = await restarted.list_tasks(a2a_pb2.ListTasksRequest(context_id="t-retry"))
    assert [t.id for t in listed.tasks] == [paused.id, done.id]


async def test_a_reply_to_an_answered_request_is_refused_and_keeps_the_task(
        connect: ClientMaker, gate: Gate, host: WorkflowHost) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask2", context_id="t-late"))
    again = await send_task(client, answer(paused, True))
    assert again.status.state == INPUT_REQUIRED
    # a late reply still naming the first request, as a bare value (the 'any one value' rule
    # must not take it for the second request)
    late = user_message(a2a_pb2.Part(data=proto_value({request_id(paused): False})),
                        task_id=paused.id)
    with pytest.raises(UnsupportedOperationError) as refused:
        await send(client, late)
    assert (refused.value.data or {}).get("reason") == "already_answered", refused.value
    kept = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert kept.status.state == INPUT_REQUIRED and request_id(kept) == request_id(again)
    assert gate.runs["answer"] == 1
    state = await host.get_conversation("t-late", principal="alice")
    assert list(state.pending_requests) == [request_id(again)]


async def test_a_branch_is_explicit_from_a_snapshot_and_a_new_task(
        connect: ClientMaker, gate: Gate, host: WorkflowHost) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask", context_id="t-branch"))
    snapshot = meta(paused)["resumeToken"]["snapshotId"]
    assert texts(await send_task(client, answer(paused, True))) == ["published"]
    branch = user_message(a2a_pb2.Part(data=proto_value({request_id(paused): False})),
                          context_id="t-branch")
    branch.metadata.update({"checkflow": {"fromSnapshot": snapshot}})
    forked = await send_task(client, branch)
    assert forked.id != paused.id
    assert (forked.status.state, texts(forked)) == (COMPLETED, ["dropped"])
    assert (await host.get_conversation("t-branch", principal="alice")).outputs[-1:] == [
        "dropped"]
    # the branch drops the other line: the first task is shown as of its pause there, and
    # answering it again is refused (its pause is no longer the head), never a third line
    kept = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert (kept.status.state, texts(kept)) == (INPUT_REQUIRED, [])
    with pytest.raises(UnsupportedOperationError) as refused:
        await send(client, answer(paused, True))
    assert (refused.value.data or {}).get("reason") == "TASK_ALREADY_CONTINUED", refused.value
    assert gate.runs["answer"] == 2
    unknown = user_message("hello", context_id="t-branch")
    unknown.metadata.update({"checkflow": {"fromSnapshot": "no-such-snapshot"}})
    with pytest.raises(InvalidParamsError, match="no-such-snapshot"):
        await send(client, unknown)


@pytest.mark.parametrize(("meta", "task", "match"), [
    ({"fromSnapshot": 3}, False, "must name a snapshot id"),
    ({"fromSnapshot": ""}, False, "must name a snapshot id"),
    ({"fromSnapshot": "s1"}, True, "starts a new task"),
], ids=["not-a-string", "empty", "with-task-id"])
async def test_a_malformed_branch_is_invalid_params_and_runs_nothing(
        connect: ClientMaker, gate: Gate, meta: dict[str, Any], task: bool,
        match: str) -> None:
    client = await connect()
    paused = await send_task(client, user_message("ask", context_id="t-bad-branch"))
    message = user_message("hello", context_id="t-bad-branch",
                           task_id=paused.id if task else None)
    message.metadata.update({"checkflow": meta})
    with pytest.raises(InvalidParamsError, match=match):
        await send(client, message)
    assert (gate.runs["hello"], gate.runs["answer"]) == (0, 0)


async def test_a_message_id_that_cannot_be_a_key_is_invalid_params(
        connect: ClientMaker, gate: Gate) -> None:
    message = user_message("hello")
    message.message_id = "m" * 300
    with pytest.raises(InvalidParamsError, match="messageId"):
        await send(await connect(), message)
    assert gate.runs["hello"] == 0


async def test_a_retry_of_a_running_turn_follows_it_and_runs_nothing(
        connect: ClientMaker, gate: Gate) -> None:
    client = await connect()
    first = user_message("hold", context_id="t-attach")
    task = await send_task(client, first, return_immediately=True)
    try:
        await asyncio.wait_for(gate.entered.wait(), 10)
        again = await send_task(client, first, return_immediately=True)
        assert (again.id, again.status.state in LIVE) == (task.id, True)
        waiting = asyncio.create_task(send_task(await connect(), first))  # blocking: to the end
    finally:
        gate.release.set()
    done = await asyncio.wait_for(waiting, 10)
    assert (done.id, done.status.state, texts(done)) == (task.id, COMPLETED, ["released"])
    replayed = await send_task(client, first)
    assert (replayed.id, texts(replayed)) == (task.id, ["released"])
    assert gate.runs["hold"] == 1


async def test_following_a_task_that_ended_before_it_was_followed_ends_at_once(
        connect: ClientMaker, host: WorkflowHost) -> None:
    # a retry that arrives as its turn finishes follows a task already COMPLETED: it must
    # answer with that task, not wait for a change that never comes
    done = await send_task(await connect(), user_message("hello", context_id="t-ended"))
    store = A2ATaskStore(host, lambda _task_id: False)
    view = await store.load(done.id, "alice")
    assert view is not None and view.state == COMPLETED

    async def follow() -> list[Any]:
        return [e async for e in follow_task(host, store, view, view.task, "alice",
                                             poll_seconds=0.01, max_seconds=60)]

    assert await asyncio.wait_for(follow(), 10) == [view.task]


async def test_stopping_the_hosts_turns_ends_a_blocking_send_canceled(
        connect: ClientMaker, gate: Gate, host: WorkflowHost) -> None:
    client = await connect()
    sending = asyncio.create_task(send_task(client, user_message("hold", context_id="t-stop")))
    await asyncio.wait_for(gate.entered.wait(), 10)
    await host.stop_turns()  # what serve does on SIGTERM
    stopped = await asyncio.wait_for(sending, 10)
    assert stopped.status.state == CANCELED and texts(stopped) == []
    assert (await client.get_task(a2a_pb2.GetTaskRequest(id=stopped.id))).status.state == (
        CANCELED)
    gate.release.set()
