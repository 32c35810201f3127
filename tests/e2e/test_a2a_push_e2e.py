"""A2A push notifications end to end: ``python -m checkflow serve`` (two processes in turn,
one file storage) POSTing to a webhook receiver on 127.0.0.1 that the test runs, with the
official a2a-sdk client over JSON-RPC and REST. The first server is killed (SIGKILL) after a
state change whose delivery the receiver refused; the restarted server delivers it."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.client import Client
from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from a2a_wire import message, one_task
from google.protobuf import json_format
from push_receiver import Receiver, running_receiver

from checkflow.adapters.a2a import TOKEN_HEADER

pytestmark = pytest.mark.slow

ARGS = ("--adapters", "native,a2a_push_flows:push_adapter",
        "--authenticate", "e2e_flows:authenticate")
TARGET = "a2a_e2e_flows:workflow"
COMPLETED = "TASK_STATE_COMPLETED"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as receiver:
        yield receiver


def push_config(task_id: str, url: str, config_id: str) -> a2a_pb2.TaskPushNotificationConfig:
    return a2a_pb2.TaskPushNotificationConfig(
        task_id=task_id, id=config_id, url=url, token=f"token-{config_id}",
        authentication=a2a_pb2.AuthenticationInfo(scheme="Bearer", credentials="hook-secret"))


async def answer(client: Client, task: a2a_pb2.Task) -> a2a_pb2.Task:
    data = [json_format.MessageToDict(p.data) for p in task.status.message.parts
            if p.WhichOneof("content") == "data"]
    request_id = data[0]["pendingRequests"][0]["requestId"]
    return await one_task(client, message({request_id: True}, task_id=task.id))


async def test_a_refused_delivery_is_delivered_by_the_restarted_server(
        start_server: Any, connect: Any, receiver: Receiver, tmp_path: Path) -> None:
    storage = f"file:{tmp_path / 'shared'}"
    receiver.default = 503  # the webhook refuses while the first server runs
    first = start_server(TARGET, storage, *ARGS)
    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{first.url}/.well-known/agent-card.json",
                               headers={"authorization": "Bearer alice"})).json()
    assert card["capabilities"]["pushNotifications"] is True
    alice, bob = await connect(first.url, "alice"), await connect(first.url, "bob")
    paused = await one_task(alice, message("ask"))
    made = await alice.create_task_push_notification_config(
        push_config(paused.id, f"{receiver.url}/hook", "one"))
    assert made.id == "one" and made.task_id == paused.id
    for call in (bob.list_task_push_notification_configs(
                     a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=paused.id)),
                 bob.delete_task_push_notification_config(
                     a2a_pb2.DeleteTaskPushNotificationConfigRequest(task_id=paused.id,
                                                                     id="one"))):
        with pytest.raises(TaskNotFoundError):
            await call
    with pytest.raises(InvalidParamsError, match="scheme must be http or https"):
        await alice.create_task_push_notification_config(
            push_config(paused.id, "file:///etc/passwd", "bad"))
    done = await answer(alice, paused)
    assert done.status.state == a2a_pb2.TASK_STATE_COMPLETED
    await receiver.until(lambda d: d.state == COMPLETED and d.status == 503)
    first.process.send_signal(signal.SIGKILL)  # no graceful anything: the process is gone
    first.process.wait(30)
    assert receiver.accepted(COMPLETED) == []

    receiver.default = 200  # the webhook is back; so is the server, on the same files
    second = start_server(TARGET, storage, *ARGS)
    delivery = await receiver.until(
        lambda d: d.state == COMPLETED and d.status == 200 and d.task_id == paused.id)
    assert delivery.path == "/hook"
    assert delivery.headers[TOKEN_HEADER.lower()] == "token-one"
    assert delivery.headers["authorization"] == "Bearer hook-secret"
    assert delivery.body["task"]["artifacts"][0]["parts"][0]["text"] == "published"

    alice = await connect(second.url, "alice")
    listed = await alice.list_task_push_notification_configs(
        a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=paused.id))
    assert [c.url for c in listed.configs] == [f"{receiver.url}/hook"]
    got = await alice.get_task_push_notification_config(
        a2a_pb2.GetTaskPushNotificationConfigRequest(task_id=paused.id, id="one"))
    assert got.token == "token-one"

    # retries with backoff: the receiver answers 500 twice, then takes it
    receiver.answers = [500, 500]
    before = len(receiver.deliveries)
    again = await one_task(alice, message("ask"))
    await alice.create_task_push_notification_config(
        push_config(again.id, f"{receiver.url}/again", "two"))
    await answer(alice, again)
    await receiver.until(
        lambda d: d.state == COMPLETED and d.status == 200 and d.task_id == again.id)
    tried = [d for d in receiver.deliveries[before:] if d.task_id == again.id]
    assert [d.status for d in tried[:3]] == [500, 500, 200]
    assert tried[1].at - tried[0].at >= 0.04 and tried[2].at - tried[1].at >= 0.09

    await alice.delete_task_push_notification_config(
        a2a_pb2.DeleteTaskPushNotificationConfigRequest(task_id=paused.id, id="one"))
    listed = await alice.list_task_push_notification_configs(
        a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=paused.id))
    assert list(listed.configs) == []
