"""A2A end to end: ``python -m checkflow serve --adapters a2a`` on loopback (uvicorn), driven
by the official a2a-sdk client over JSON-RPC and REST, through a restart and across two
server processes sharing one file storage."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.client import Client
from a2a.types import a2a_pb2
from google.protobuf import json_format

pytestmark = pytest.mark.slow

TARGET = "a2a_e2e_flows:workflow"


def message(text: str | None = None, *, data: Any = None, task_id: str | None = None,
            context_id: str | None = None) -> a2a_pb2.SendMessageRequest:
    part = a2a_pb2.Part(text=text) if text is not None else a2a_pb2.Part(
        data=json_format.ParseDict(data, a2a_pb2.Part().data))
    out = a2a_pb2.Message(message_id=uuid.uuid4().hex, role=a2a_pb2.ROLE_USER, parts=[part])
    if task_id:
        out.task_id = task_id
    if context_id:
        out.context_id = context_id
    return a2a_pb2.SendMessageRequest(message=out)


async def one_task(client: Client, request: a2a_pb2.SendMessageRequest) -> a2a_pb2.Task:
    (response,) = [r async for r in client.send_message(request)]
    assert response.HasField("task"), response
    return response.task


def request_id(task: a2a_pb2.Task) -> str:
    data = [json_format.MessageToDict(p.data) for p in task.status.message.parts
            if p.WhichOneof("content") == "data"]
    return str(data[0]["pendingRequests"][0]["requestId"])


async def test_card_send_and_stream_over_a_real_server(start_server: Any, connect: Any,
                                                       binding: str) -> None:
    server = start_server(TARGET, None, "--adapters", "native,a2a")
    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{server.url}/.well-known/agent-card.json")).json()
    assert [i["url"] for i in card["supportedInterfaces"]] == [f"{server.url}/a2a",
                                                               f"{server.url}/a2a/rest"]
    assert card["capabilities"]["streaming"] is True and card["name"] == "a2a-e2e"
    task = await one_task(await connect(server.url), message("hi"))
    assert task.status.state == a2a_pb2.TASK_STATE_COMPLETED
    assert task.artifacts[0].parts[0].text == "echo: hi"
    streamed = [r async for r in (await connect(server.url, streaming=True)).send_message(
        message("chunks"))]
    assert [r.WhichOneof("payload") for r in streamed] == [
        "task", "status_update", "artifact_update", "artifact_update", "status_update"]
    assert streamed[-1].status_update.status.state == a2a_pb2.TASK_STATE_COMPLETED


async def test_a_paused_task_continues_after_a_restart_and_on_a_second_server(
        start_server: Any, connect: Any, tmp_path: Path) -> None:
    storage = f"file:{tmp_path / 'shared'}"
    first = start_server(TARGET, storage, "--adapters", "native,a2a")
    paused = await one_task(await connect(first.url), message("ask", context_id="ctx-e2e"))
    assert paused.status.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED
    first.stop()
    restarted = start_server(TARGET, storage, "--adapters", "native,a2a")
    second = start_server(TARGET, storage, "--adapters", "native,a2a")  # a replica, same files
    client = await connect(restarted.url)
    read = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert read.status.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED
    done = await one_task(await connect(second.url), message(
        data={request_id(paused): True}, task_id=paused.id))
    assert done.status.state == a2a_pb2.TASK_STATE_COMPLETED
    assert done.artifacts[0].parts[0].text == "published"
    again = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert again.status.state == a2a_pb2.TASK_STATE_COMPLETED
    # the next task of the context, on the restarted server, sees the same conversation
    nxt = await one_task(client, message("after", context_id="ctx-e2e"))
    assert nxt.status.state == a2a_pb2.TASK_STATE_COMPLETED
    async with httpx.AsyncClient() as http:
        seen = (await http.get(f"{second.url}/v1/conversations/ctx-e2e")).json()
    assert seen["outputs"][-2:] == ["published", "echo: after"]


async def test_subscribing_to_a_working_task_follows_it_to_the_end(
        start_server: Any, connect: Any, gates: Any) -> None:
    server = start_server(TARGET, None, "--adapters", "native,a2a")
    request = message("hold:sub", context_id="ctx-sub")
    request.configuration.return_immediately = True
    task = await one_task(await connect(server.url), request)
    await asyncio.to_thread(gates.wait_entered, "sub")
    client = await connect(server.url, streaming=True)
    seen: list[a2a_pb2.StreamResponse] = []
    async for event in client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=task.id)):
        seen.append(event)
        if len(seen) == 1:
            gates.release("sub")  # attached: now let the run finish
    assert seen[0].task.id == task.id
    assert [e.artifact_update.artifact.parts[0].text for e in seen
            if e.HasField("artifact_update")] == ["released"]
    assert seen[-1].status_update.status.state == a2a_pb2.TASK_STATE_COMPLETED
