"""``returnImmediately``: the task it answers with is the task every later read shows, for a
new task and for a continuation (its earlier turns, the question it answered, the answer),
over JSON-RPC and REST with the official a2a-sdk client. Runs are held on the in-process
gate (asyncio events), never on a sleep. The timing on the wire is tested end to end
(tests/e2e/test_a2a_conformance_e2e.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a_flows import Gate
from conftest import ClientMaker, send_task, user_message

from checkflow.adapters.a2a._parts import proto_value, python_value

WORKING = a2a_pb2.TASK_STATE_WORKING
LIVE = (a2a_pb2.TASK_STATE_SUBMITTED, WORKING)


def ids(task: a2a_pb2.Task) -> list[tuple[int, str]]:
    return [(int(m.role), m.message_id) for m in task.history]


def sdk_complaints(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the SDK logged as an error (e.g. a task it was set up with twice)."""
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("a2a") and r.levelno >= logging.ERROR]


async def test_a_new_task_returned_at_once_names_its_context_and_waits_for_nothing(
        connect: ClientMaker, gate: Gate, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    client = await connect()
    sent = user_message("hold", context_id="ri-new")
    task = await send_task(client, sent, return_immediately=True)
    await asyncio.wait_for(gate.entered.wait(), 10)
    assert task.status.state in LIVE and task.history[0].message_id == sent.message_id
    assert python_value(task.metadata)["checkflow"] == {
        "conversationId": "ri-new", "pendingRequestIds": [], "resumeToken": None}
    gate.release.set()
    assert sdk_complaints(caplog) == []  # the SDK was set up with a new task, announced once


async def test_a_continuation_returned_at_once_is_the_task_as_it_reads_afterwards(
        connect: ClientMaker, gate: Gate, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    gate.answer_release = asyncio.Event()
    client = await connect()
    paused = await send_task(client, user_message("ask", context_id="ri-cont"))
    (rid,) = python_value(paused.metadata)["checkflow"]["pendingRequestIds"]
    answer = user_message(a2a_pb2.Part(data=proto_value({rid: True})), task_id=paused.id)
    task = await send_task(client, answer, return_immediately=True)
    await asyncio.wait_for(gate.answer_entered.wait(), 10)  # the answer's superstep runs
    question = paused.status.message
    assert task.status.state == WORKING and not task.status.HasField("message")
    assert ids(task) == [(a2a_pb2.ROLE_USER, paused.history[0].message_id),
                         (a2a_pb2.ROLE_AGENT, question.message_id),
                         (a2a_pb2.ROLE_USER, answer.message_id)]
    assert python_value(task.metadata)["checkflow"]["pendingRequestIds"] == []
    live = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert (live.status.state, ids(live)) == (WORKING, ids(task))
    gate.answer_release.set()
    while (done := await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
           ).status.state == WORKING:
        await asyncio.sleep(0.01)  # polling the outcome, not waiting for an overlap
    assert done.status.state == a2a_pb2.TASK_STATE_COMPLETED
    assert ids(done) == ids(task)  # the question keeps its id: every read names it alike
    assert sdk_complaints(caplog) == []
