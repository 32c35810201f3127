"""Issue 29 over A2A, end to end: ``python -m checkflow serve --adapters a2a`` on loopback,
driven by the official a2a-sdk client over JSON-RPC and REST (and plain HTTP where the
literal JSON is the point). Races are held on the marker-file gates of
``a2a_conformance_flows``; no test sleeps for an overlap.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import A2AError, UnsupportedOperationError
from google.protobuf import json_format

pytestmark = pytest.mark.slow

TARGET = "a2a_conformance_flows:workflow"
WHOLE = "a2a_conformance_flows:whole"
A2A = ("--adapters", "a2a")
DEADLINE = 60.0

Connect = Callable[..., Awaitable[Client]]


@pytest.fixture(params=[TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON],
                ids=["jsonrpc", "rest"])
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param.value)


@pytest.fixture
async def connect(binding: str) -> AsyncIterator[Connect]:
    """``await connect(url, streaming=False)`` -> an official a2a-sdk client on ``binding``."""
    opened: list[httpx.AsyncClient] = []

    async def make(url: str, *, streaming: bool = False) -> Client:
        http = httpx.AsyncClient(timeout=DEADLINE)
        opened.append(http)
        return await ClientFactory(ClientConfig(
            httpx_client=http, streaming=streaming,
            supported_protocol_bindings=[binding])).create_from_url(url)

    yield make
    for http in opened:
        await http.aclose()


def message(text: str | None = None, *, data: Any = None, task_id: str | None = None,
            context_id: str | None = None, return_immediately: bool = False
            ) -> a2a_pb2.SendMessageRequest:
    part = a2a_pb2.Part(text=text) if text is not None else a2a_pb2.Part(
        data=json_format.ParseDict(data, a2a_pb2.Part().data))
    out = a2a_pb2.Message(message_id=uuid.uuid4().hex, role=a2a_pb2.ROLE_USER, parts=[part])
    if task_id:
        out.task_id = task_id
    if context_id:
        out.context_id = context_id
    request = a2a_pb2.SendMessageRequest(message=out)
    request.configuration.return_immediately = return_immediately
    return request


async def one_task(client: Client, request: a2a_pb2.SendMessageRequest) -> a2a_pb2.Task:
    (response,) = [r async for r in client.send_message(request)]
    assert response.HasField("task"), response
    return response.task


def meta(task: a2a_pb2.Task) -> dict[str, Any]:
    found = json_format.MessageToDict(task.metadata).get("checkflow", {})
    assert isinstance(found, dict)
    return found


def status_data(task: a2a_pb2.Task) -> dict[str, Any]:
    (data,) = [json_format.MessageToDict(p.data) for p in task.status.message.parts
               if p.WhichOneof("content") == "data"]
    assert isinstance(data, dict)
    return data


def snake_keys(value: Any) -> set[str]:
    """Every object key in a JSON value that is spelled with an underscore."""
    if isinstance(value, dict):
        return {k for k in value if "_" in k} | {
            k for v in value.values() for k in snake_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in snake_keys(v)}
    return set()


# -- 1. every name checkflow writes into A2A's JSON is camelCase ------------------------------

async def test_task_metadata_status_data_and_error_data_are_camel_case(
        start_server: Any, connect: Connect) -> None:
    server = start_server(TARGET, None, *A2A)
    client = await connect(server.url)
    paused = await one_task(client, message("ask", context_id="ctx-names"))
    token = meta(paused)["resumeToken"]
    assert meta(paused) == {"conversationId": "ctx-names",
                            "pendingRequestIds": [meta(paused)["pendingRequestIds"][0]],
                            "resumeToken": token}
    assert set(token) == {"checkpointId", "snapshotId"}
    (request,) = status_data(paused)["pendingRequests"]
    assert set(request) == {"requestId", "data", "responseSchema", "sourceExecutorId"}
    assert (request["requestId"], request["data"], request["responseSchema"]) == (
        meta(paused)["pendingRequestIds"][0], {"question": "publish?"}, {"type": "boolean"})
    with pytest.raises(UnsupportedOperationError) as waiting:  # the waiting-task rule
        await one_task(client, message("next", context_id="ctx-names"))
    assert waiting.value.data == {"waitingTaskId": paused.id}
    answer = {request["requestId"]: True}
    done = await one_task(client, message(data=answer, task_id=paused.id))
    assert meta(done) == {"conversationId": "ctx-names", "pendingRequestIds": [],
                          "resumeToken": None}
    with pytest.raises(A2AError) as late:
        await one_task(client, message(data=answer, task_id=paused.id))
    assert late.value.data == {"reason": "already_answered",
                               "requestIds": [request["requestId"]]}
    # the literal JSON a plain client reads: no snake_case name of ours anywhere in it
    async with httpx.AsyncClient(timeout=DEADLINE, headers={"A2A-Version": "1.0"}) as http:
        rpc = (await http.post(f"{server.url}/a2a", json={
            "jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": paused.id}})).json()
        rest = (await http.get(f"{server.url}/a2a/rest/tasks/{paused.id}")).json()
    for task in (rpc["result"], rest):
        assert task["metadata"]["checkflow"]["pendingRequestIds"] == []
        assert snake_keys(task) == set(), task


# -- 2. returnImmediately answers at once with the Task; a stream opens with it --------------

SUPERSTEP = 4.0
"""How long a held superstep lasts: its gate opens by itself then (a timer, not a sleep)."""
LIVE = (a2a_pb2.TASK_STATE_SUBMITTED, a2a_pb2.TASK_STATE_WORKING)


def open_later(gates: Any, name: str) -> threading.Timer:
    """The gate ``name`` opens ``SUPERSTEP`` seconds from now."""
    opener = threading.Timer(SUPERSTEP, gates.release, args=(name,))
    opener.start()
    return opener


def released(gates: Any, name: str) -> bool:
    return bool((Path(gates.folder) / f"{name}.release").exists())


def texts(task: a2a_pb2.Task) -> list[str]:
    return [p.text for a in task.artifacts for p in a.parts if p.text]


@pytest.mark.parametrize("target", [TARGET, WHOLE], ids=["text-start", "a2a-message-start"])
async def test_return_immediately_answers_with_the_task_before_its_first_superstep_ends(
        start_server: Any, connect: Connect, gates: Any, target: str) -> None:
    server = start_server(target, None, *A2A)
    client = await connect(server.url)
    request = message("hold:ri", context_id="ctx-ri", return_immediately=True)
    opener = open_later(gates, "ri")
    asked = time.monotonic()
    task = await one_task(client, request)
    took = time.monotonic() - asked
    assert not released(gates, "ri"), f"answered after the superstep ended ({took:.3f} s)"
    print(f"returnImmediately answered in {took * 1000:.1f} ms")  # the measure, for -s
    assert task.status.state in LIVE and texts(task) == []
    assert task.history[0].message_id == request.message.message_id
    # from then on it is there: got, subscribed to, cancelled
    got = await client.get_task(a2a_pb2.GetTaskRequest(id=task.id))
    assert (got.id, got.status.state in LIVE) == (task.id, True)
    follower = (await connect(server.url, streaming=True)).subscribe(
        a2a_pb2.SubscribeToTaskRequest(id=task.id))
    first = await anext(follower)
    assert first.task.id == task.id and first.task.status.state in LIVE
    await follower.aclose()
    assert not released(gates, "ri")  # all of it while the first superstep still runs
    canceled = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task.id))
    opener.join()
    assert canceled.status.state == a2a_pb2.TASK_STATE_CANCELED
    final = await client.get_task(a2a_pb2.GetTaskRequest(id=task.id))
    assert (final.status.state, texts(final)) == (a2a_pb2.TASK_STATE_CANCELED, [])


async def test_return_immediately_answers_a_continuation_with_the_task_at_once(
        start_server: Any, connect: Connect, gates: Any) -> None:
    server = start_server(TARGET, None, *A2A)
    client = await connect(server.url)
    paused = await one_task(client, message("ask:rc", context_id="ctx-rc"))
    answer = message(data={meta(paused)["pendingRequestIds"][0]: True}, task_id=paused.id,
                     return_immediately=True)
    opener = open_later(gates, "rc")
    task = await one_task(client, answer)
    assert not released(gates, "rc"), "the continuation was answered after its superstep"
    assert (task.id, task.status.state) == (paused.id, a2a_pb2.TASK_STATE_WORKING)
    assert task.history[-1].message_id == answer.message.message_id
    opener.join()
    done = await wait_for_end(client, paused.id)
    assert (done.status.state, texts(done)) == (a2a_pb2.TASK_STATE_COMPLETED, ["published"])


async def wait_for_end(client: Client, task_id: str) -> a2a_pb2.Task:
    """The task once it left its live states (polled, with a generous deadline)."""
    end = time.monotonic() + DEADLINE
    while (task := await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
           ).status.state in LIVE:
        assert time.monotonic() < end, task
        await asyncio.sleep(0.05)
    return task


@pytest.mark.parametrize("kind", ["new-task", "continuation"])
async def test_a_stream_opens_with_the_task_before_any_output(
        start_server: Any, connect: Connect, gates: Any, kind: str) -> None:
    server = start_server(TARGET, None, *A2A)
    if kind == "new-task":
        request = message("hold:st", context_id="ctx-st")
    else:
        paused = await one_task(await connect(server.url), message("ask:st",
                                                                   context_id="ctx-st"))
        request = message(data={meta(paused)["pendingRequestIds"][0]: True},
                          task_id=paused.id)
    stream = (await connect(server.url, streaming=True)).send_message(request)
    opener = open_later(gates, "st")
    first = await anext(stream)
    assert not released(gates, "st"), "the stream's first event came after the superstep"
    assert first.HasField("task"), first
    assert first.task.status.state in LIVE
    assert first.task.history[-1].message_id == request.message.message_id
    rest = [event async for event in stream]
    opener.join()
    assert [e.WhichOneof("payload") for e in rest][-2:] == ["artifact_update",
                                                            "status_update"]
    assert rest[-1].status_update.status.state == a2a_pb2.TASK_STATE_COMPLETED
    assert not any(e.HasField("task") for e in rest)
