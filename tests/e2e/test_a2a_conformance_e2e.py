"""Issue 29 over A2A, end to end: ``python -m checkflow serve --adapters a2a`` on loopback,
driven by the official a2a-sdk client over JSON-RPC and REST (and plain HTTP where the
literal JSON is the point). Races are held on the marker-file gates of
``a2a_conformance_flows``; no test sleeps for an overlap.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.client import Client
from a2a.types import a2a_pb2
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InvalidRequestError,
    UnsupportedOperationError,
)
from google.protobuf import json_format

pytestmark = pytest.mark.slow

TARGET = "a2a_conformance_flows:workflow"
WHOLE = "a2a_conformance_flows:whole"
A2A = ("--adapters", "a2a")
DEADLINE = 60.0

Connect = Callable[..., Awaitable[Client]]


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


# -- 3. a continuation reaches the workflow whole; a final A2AMessage is the status message ---

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16


def attachment(task_id: str, raw: bytes = PNG) -> a2a_pb2.SendMessageRequest:
    """A continuation carrying a raw file, a file by URL, a text part and metadata."""
    request = message("the scan", task_id=task_id)
    request.message.parts.extend([
        a2a_pb2.Part(raw=raw, filename="scan.png", media_type="image/png"),
        a2a_pb2.Part(url="https://files.example.com/scan.pdf", filename="scan.pdf")])
    request.message.metadata.update({"trace": "e2e"})
    return request


async def test_a_continuation_reaches_the_workflow_whole_and_completes_with_its_message(
        start_server: Any, connect: Connect) -> None:
    server = start_server(TARGET, None, *A2A)
    client = await connect(server.url)
    paused = await one_task(client, message("attach", context_id="ctx-attach"))
    (request,) = status_data(paused)["pendingRequests"]
    assert request["takesMessage"] is True
    assert snake_keys(json_format.MessageToDict(paused)) == set()  # no Python type's schema
    answer = attachment(paused.id)
    done = await one_task(client, answer)
    assert done.status.state == a2a_pb2.TASK_STATE_COMPLETED
    seen = json_format.MessageToDict(done.artifacts[0].parts[0].data)
    assert seen == {"messageId": answer.message.message_id, "metadata": {"trace": "e2e"},
                    "files": [["scan.png", len(PNG)],
                              ["scan.pdf", "https://files.example.com/scan.pdf"]]}
    assert [p.text for p in done.status.message.parts] == ["2 file(s) in"]
    # the literal JSON: the status message and the continuation in the history, both
    # bindings alike, and again from a restarted server on the same store
    bodies = await literal_tasks(server.url, paused.id)
    server.stop()
    again = start_server(TARGET, None, *A2A)
    assert await literal_tasks(again.url, paused.id) == bodies
    for task in bodies:
        status = task["status"]["message"]
        assert (status["role"], status["parts"], status["metadata"]) == (
            "ROLE_AGENT", [{"text": "2 file(s) in"}], {"files": 2})
        users = [m for m in task["history"] if m["role"] == "ROLE_USER"]
        assert [m["messageId"] for m in users] == [paused.history[0].message_id,
                                                   answer.message.message_id]
        assert users[1]["parts"][1]["filename"] == "scan.png"
        assert base64.b64decode(users[1]["parts"][1]["raw"]) == PNG
        assert users[1]["metadata"] == {"trace": "e2e"}


async def literal_tasks(url: str, task_id: str) -> list[dict[str, Any]]:
    """The task as JSON-RPC's GetTask and REST's GET answer it, literally."""
    async with httpx.AsyncClient(timeout=DEADLINE, headers={"A2A-Version": "1.0"}) as http:
        rpc = (await http.post(f"{url}/a2a", json={
            "jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}})).json()
        rest = (await http.get(f"{url}/a2a/rest/tasks/{task_id}")).json()
    return [rpc["result"], rest]


async def test_a_file_part_is_refused_where_it_cannot_go_or_over_the_body_limit(
        start_server: Any, connect: Connect) -> None:
    server = start_server(TARGET, None, *A2A, "--max-body-bytes", "65536")
    client = await connect(server.url)
    asking = await one_task(client, message("ask", context_id="ctx-file-bool"))
    with pytest.raises(ContentTypeNotSupportedError) as wrong:
        await one_task(client, attachment(asking.id))
    assert 'takes JSON Schema {"type":"boolean"}' in str(wrong.value)
    assert wrong.value.data["reason"] == "file_part_not_accepted"
    attaching = await one_task(client, message("attach", context_id="ctx-file-big"))
    with pytest.raises(InvalidRequestError) as big:
        await one_task(client, attachment(attaching.id, raw=b"x" * 70_000))
    assert "larger than 65536 bytes" in str(big.value)
    assert big.value.data == {"reason": "body_too_large", "limit": 65536}
    for task in (asking, attaching):  # both still wait, as they were
        still = await client.get_task(a2a_pb2.GetTaskRequest(id=task.id))
        assert still.status.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED
    done = await one_task(client, attachment(attaching.id))
    assert done.status.state == a2a_pb2.TASK_STATE_COMPLETED


# -- 4. the agent card: Cache-Control, ETag, Last-Modified, 304s -------------------------------

async def test_the_agent_card_is_cacheable_and_revalidates_with_304s(start_server: Any) -> None:
    server = start_server(TARGET, None, *A2A)
    card_url = f"{server.url}/.well-known/agent-card.json"
    async with httpx.AsyncClient(timeout=DEADLINE) as http:
        card = await http.get(card_url)
        assert card.status_code == 200 and card.json()["capabilities"]["streaming"] is True
        assert card.headers["cache-control"] == "public, max-age=300"
        assert card.headers["etag"].startswith('W/"')
        assert (await http.get(card_url)).headers["last-modified"] == card.headers[
            "last-modified"]
        for conditional in ({"if-none-match": card.headers["etag"]},
                            {"if-modified-since": card.headers["last-modified"]}):
            again = await http.get(card_url, headers=conditional)
            assert (again.status_code, again.content) == (304, b""), conditional
            assert again.headers["etag"] == card.headers["etag"]
            assert again.headers["last-modified"] == card.headers["last-modified"]
        stale = await http.get(card_url, headers={"if-none-match": 'W/"old"'})
        assert stale.status_code == 200
