"""Issue 27 over A2A, end to end: ``python -m checkflow serve --adapters a2a`` on loopback,
driven by the official a2a-sdk client (JSON-RPC), with restarts, a second server on the same
``file:`` (or ``cosmos:``, the local emulator) storage, SIGKILL and SIGTERM. Every race is
held on a marker-file gate of ``a2a_truth_flows``; every wait is a poll with a generous
deadline.

One test per A2A point of the issue: a cancel clears the task's request, a subscribe follows
an input-required task through its continuation, a start taking ``A2AMessage`` has its task
at once, a retried ``messageId`` replays, a late reply is refused (a branch is explicit), a
killed owner's task is settled, a second server follows and cancels, and SIGTERM ends a
running stream with a status update.
"""

from __future__ import annotations

import asyncio
import signal
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
from a2a_truth_flows import SPINS
from google.protobuf import json_format

pytestmark = pytest.mark.slow

TARGET = "a2a_truth_flows:workflow"
WHOLE = "a2a_truth_flows:whole"
A2A = ("--adapters", "native,a2a")
INPUT_REQUIRED = a2a_pb2.TASK_STATE_INPUT_REQUIRED
COMPLETED = a2a_pb2.TASK_STATE_COMPLETED
CANCELED = a2a_pb2.TASK_STATE_CANCELED
FAILED = a2a_pb2.TASK_STATE_FAILED
LIVE = (a2a_pb2.TASK_STATE_SUBMITTED, a2a_pb2.TASK_STATE_WORKING)
DEADLINE = 60.0

Connect = Callable[..., Awaitable[Client]]


@pytest.fixture(params=["file", "cosmos"])
def shared_storage(request: pytest.FixtureRequest, tmp_path: Path,
                   monkeypatch: pytest.MonkeyPatch) -> str:
    """The ``--storage`` two servers share: ``file:`` in a folder, or ``cosmos:`` on the local
    emulator (a fresh database; the servers read the CHECKFLOW_COSMOS_* variables)."""
    if request.param == "file":
        return f"file:{tmp_path / 'shared'}"
    emulator = request.getfixturevalue("cosmos_emulator")
    monkeypatch.setenv("CHECKFLOW_COSMOS_ENDPOINT", emulator.endpoint)
    monkeypatch.setenv("CHECKFLOW_COSMOS_KEY", emulator.key)
    monkeypatch.setenv("CHECKFLOW_COSMOS_DATABASE", f"db-{uuid.uuid4().hex}")
    return "cosmos:"


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """``await connect(url, streaming=False)`` -> an official a2a-sdk client (JSON-RPC)."""
    opened: list[httpx.AsyncClient] = []

    async def make(url: str, *, streaming: bool = False) -> Client:
        http = httpx.AsyncClient(timeout=DEADLINE)
        opened.append(http)
        return await ClientFactory(ClientConfig(
            httpx_client=http, streaming=streaming,
            supported_protocol_bindings=[TransportProtocol.JSONRPC.value])
        ).create_from_url(url)

    yield make
    for http in opened:
        await http.aclose()


def message(text: str | None = None, *, data: Any = None, task_id: str | None = None,
            context_id: str | None = None, message_id: str | None = None,
            metadata: dict[str, Any] | None = None, return_immediately: bool = False
            ) -> a2a_pb2.SendMessageRequest:
    part = a2a_pb2.Part(text=text) if text is not None else a2a_pb2.Part(
        data=json_format.ParseDict(data, a2a_pb2.Part().data))
    out = a2a_pb2.Message(message_id=message_id or uuid.uuid4().hex, role=a2a_pb2.ROLE_USER,
                          parts=[part])
    if task_id:
        out.task_id = task_id
    if context_id:
        out.context_id = context_id
    if metadata:
        out.metadata.update(metadata)
    request = a2a_pb2.SendMessageRequest(message=out)
    request.configuration.return_immediately = return_immediately
    return request


async def one_task(client: Client, request: a2a_pb2.SendMessageRequest) -> a2a_pb2.Task:
    (response,) = [r async for r in client.send_message(request)]
    assert response.HasField("task"), response
    return response.task


def checkflow_meta(task: a2a_pb2.Task) -> dict[str, Any]:
    meta = json_format.MessageToDict(task.metadata).get("checkflow", {})
    assert isinstance(meta, dict)
    return meta


def request_id(task: a2a_pb2.Task) -> str:
    (rid,) = checkflow_meta(task)["pendingRequestIds"]
    return str(rid)


def answer(task: a2a_pb2.Task, value: bool, **options: Any) -> a2a_pb2.SendMessageRequest:
    return message(data={request_id(task): value}, task_id=task.id, **options)


def texts(task: a2a_pb2.Task) -> list[str]:
    return [p.text for a in task.artifacts for p in a.parts if p.text]


def runs(gates: Any, name: str) -> int:
    """How often the flow's handler for ``name`` really ran (its counter file)."""
    path = Path(gates.folder) / f"runs-{name}"
    return len(path.read_text().splitlines()) if path.exists() else 0


async def conversation(url: str, context_id: str, *, may_be_empty: bool = False
                       ) -> dict[str, Any]:
    """The native view of a context (``may_be_empty``: a context whose only turn was
    cancelled has no head, so it reads as none)."""
    async with httpx.AsyncClient(timeout=DEADLINE) as http:
        reply = await http.get(f"{url}/v1/conversations/{context_id}")
    if may_be_empty and reply.status_code == 404:
        return {"outputs": [], "pending_requests": []}
    assert reply.status_code == 200, reply.text
    seen: dict[str, Any] = reply.json()
    return seen


class Stream:
    """An A2A event stream read in the background: ``events`` so far, ``first`` set once one
    arrived, ``error`` what ended it if not its own end."""

    def __init__(self, events: AsyncIterator[a2a_pb2.StreamResponse]) -> None:
        self.events: list[a2a_pb2.StreamResponse] = []
        self.first = asyncio.Event()
        self.error: BaseException | None = None
        self._task = asyncio.create_task(self._read(events))

    async def _read(self, events: AsyncIterator[a2a_pb2.StreamResponse]) -> None:
        try:
            async for event in events:
                self.events.append(event)
                self.first.set()
        except Exception as exc:  # what ended the stream, for the assertion that reads it
            self.error = exc

    async def started(self, deadline: float = DEADLINE) -> bool:
        """Whether a first event arrived within ``deadline`` (or the stream ended first)."""
        waiter = asyncio.create_task(self.first.wait())
        await asyncio.wait({waiter, self._task}, timeout=deadline,
                           return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        return self.first.is_set()

    async def ended(self, deadline: float = DEADLINE) -> list[a2a_pb2.StreamResponse]:
        await asyncio.wait_for(asyncio.shield(self._task), deadline)
        return self.events

    def cancel(self) -> None:
        self._task.cancel()


def last_status(events: list[a2a_pb2.StreamResponse]) -> int | None:
    if not events:
        return None
    last = events[-1]
    if last.HasField("status_update"):
        return int(last.status_update.status.state)
    return int(last.task.status.state) if last.HasField("task") else None


async def wait_for_file(path: Path, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not path.exists():
        if time.monotonic() > end:
            raise TimeoutError(f"{path.name} never appeared")
        await asyncio.sleep(0.01)


# -- a cancel clears the cancelled task's request --------------------------------------------

async def test_cancelling_an_input_required_task_clears_its_request(
        start_server: Any, connect: Connect) -> None:
    server = start_server(TARGET, None, *A2A)
    client = await connect(server.url)
    paused = await one_task(client, message("ask:c1", context_id="ctx-cancel"))
    assert paused.status.state == INPUT_REQUIRED
    canceled = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=paused.id))
    assert canceled.status.state == CANCELED
    after = await one_task(client, message("next", context_id="ctx-cancel"))
    assert after.status.state == COMPLETED, checkflow_meta(after)
    assert texts(after) == ["echo: next"] and checkflow_meta(after)["pendingRequestIds"] == []
    assert (await conversation(server.url, "ctx-cancel"))["pending_requests"] == []
    again = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert again.status.state == CANCELED


# -- SubscribeToTask follows an input-required task through its continuation -----------------

async def test_subscribing_to_an_input_required_task_follows_its_continuation(
        start_server: Any, connect: Connect) -> None:
    server = start_server(TARGET, None, *A2A)
    client = await connect(server.url)
    paused = await one_task(client, message("ask2:s1", context_id="ctx-sub"))
    first_request = request_id(paused)
    follower = Stream((await connect(server.url, streaming=True)).subscribe(
        a2a_pb2.SubscribeToTaskRequest(id=paused.id)))
    assert await follower.started()
    assert follower.events[0].task.status.state == INPUT_REQUIRED
    again = await one_task(client, answer(paused, True))  # the first answer asks again
    assert again.status.state == INPUT_REQUIRED
    seen = await follower.ended()
    assert follower.error is None, follower.error
    assert len(seen) > 1 and seen[-1].HasField("status_update"), seen
    assert last_status(seen) == INPUT_REQUIRED  # it ended at the next interrupted state
    ended_on = a2a_pb2.Task(metadata=seen[-1].status_update.metadata)
    assert checkflow_meta(ended_on).get("pendingRequestIds") == [request_id(again)]
    assert request_id(again) != first_request
    # and once more to the terminal state, with the artifact on the way
    follower = Stream((await connect(server.url, streaming=True)).subscribe(
        a2a_pb2.SubscribeToTaskRequest(id=paused.id)))
    assert await follower.started()
    done = await one_task(client, answer(again, True))
    assert done.status.state == COMPLETED
    seen = await follower.ended()
    assert [p.text for e in seen if e.HasField("artifact_update")
            for p in e.artifact_update.artifact.parts] == ["published"]
    assert last_status(seen) == COMPLETED


# -- a start taking A2AMessage: the task exists at once ---------------------------------------

@pytest.mark.parametrize("mode", ["stream", "return-immediately"])
async def test_a_task_of_a_start_taking_a2a_message_exists_before_its_first_output(
        start_server: Any, connect: Connect, gates: Any, mode: str) -> None:
    server = start_server(WHOLE, None, *A2A)
    request = message("hold:w1", context_id="ctx-whole",
                      return_immediately=mode == "return-immediately")
    sender = Stream((await connect(server.url, streaming=mode == "stream")).send_message(
        request))
    try:
        await asyncio.to_thread(gates.wait_entered, "w1")  # held in its first superstep
        assert await sender.started(20.0), "no task before the first output"
        first = sender.events[0]
        assert first.HasField("task"), first
        task_id = first.task.id
        client = await connect(server.url)
        got = await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
        assert got.status.state in LIVE
        follower = Stream((await connect(server.url, streaming=True)).subscribe(
            a2a_pb2.SubscribeToTaskRequest(id=task_id)))
        assert await follower.started()
        canceled = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
        assert canceled.status.state == CANCELED
    finally:
        gates.release("w1")
    assert last_status(await follower.ended()) == CANCELED
    final = await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
    assert final.status.state == CANCELED and texts(final) == []  # "released" never came
    assert "released" not in (await conversation(server.url, "ctx-whole",
                                                  may_be_empty=True))["outputs"]


# -- a retried messageId replays its task, across a restart too -------------------------------

async def test_a_retried_message_id_returns_the_same_task_and_runs_nothing_again(
        start_server: Any, connect: Connect, gates: Any, tmp_path: Path) -> None:
    storage = f"file:{tmp_path / 'shared'}"
    server = start_server(TARGET, storage, *A2A)
    client = await connect(server.url)
    first = await one_task(client, message("count:r1", context_id="ctx-retry",
                                           message_id="m-retry-1"))
    again = await one_task(client, message("count:r1", context_id="ctx-retry",
                                           message_id="m-retry-1"))
    assert (again.id, again.status.state, texts(again)) == (first.id, COMPLETED,
                                                            ["echo: count:r1"])
    paused = await one_task(client, message("ask:r2", context_id="ctx-retry",
                                            message_id="m-retry-2"))
    done = await one_task(client, answer(paused, True, message_id="m-retry-3"))
    retried = await one_task(client, answer(paused, True, message_id="m-retry-3"))
    assert (retried.id, retried.status.state, texts(retried)) == (paused.id, COMPLETED,
                                                                  ["published"])
    assert texts(done) == ["published"]
    server.stop()
    restarted = await connect(start_server(TARGET, storage, *A2A).url)
    late = await one_task(restarted, message("count:r1", context_id="ctx-retry",
                                             message_id="m-retry-1"))
    assert (late.id, texts(late)) == (first.id, ["echo: count:r1"])
    late_answer = await one_task(restarted, answer(paused, True, message_id="m-retry-3"))
    assert (late_answer.id, late_answer.status.state) == (paused.id, COMPLETED)
    assert (runs(gates, "count:r1"), runs(gates, "ask:r2"), runs(gates, "answer-r2")) == (
        1, 1, 1)


# -- a late reply is refused; a branch is explicit --------------------------------------------

async def test_a_late_reply_is_refused_and_a_branch_is_explicit(
        start_server: Any, connect: Connect, gates: Any, tmp_path: Path) -> None:
    storage = f"file:{tmp_path / 'shared'}"
    first = start_server(TARGET, storage, *A2A)
    second = start_server(TARGET, storage, *A2A)  # the late reply reaches another process
    client = await connect(first.url)
    paused = await one_task(client, message("ask:l1", context_id="ctx-late"))
    pause_snapshot = checkflow_meta(paused)["resumeToken"]["snapshotId"]
    rid = request_id(paused)
    assert texts(await one_task(client, answer(paused, True))) == ["published"]
    other = await connect(second.url)
    with pytest.raises(A2AError) as refused:
        await one_task(other, answer(paused, False))
    assert isinstance(refused.value, UnsupportedOperationError)
    assert (refused.value.data or {}).get("reason") == "already_answered", refused.value
    assert rid in str(refused.value)
    assert (await conversation(second.url, "ctx-late"))["outputs"][-1] == "published"
    assert runs(gates, "answer-l1") == 1
    # the same answer as an explicit branch from the pause: a new task on the other line
    branch = await one_task(other, message(
        data={rid: False}, context_id="ctx-late",
        metadata={"checkflow": {"fromSnapshot": pause_snapshot}}))
    assert branch.id != paused.id
    assert (branch.status.state, texts(branch)) == (COMPLETED, ["dropped"])
    assert (await conversation(first.url, "ctx-late"))["outputs"][-1] == "dropped"
    # the branch drops the other line: the first task is shown as of its pause there, and
    # answering it again is refused (its pause is no longer the head), never a third line
    kept = await client.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert (kept.status.state, texts(kept)) == (INPUT_REQUIRED, [])
    with pytest.raises(UnsupportedOperationError) as again:
        await one_task(other, answer(paused, True))
    assert (again.value.data or {}).get("reason") == "TASK_ALREADY_CONTINUED", again.value
    assert runs(gates, "answer-l1") == 2


# -- a SIGKILLed owner: its task is settled ---------------------------------------------------

async def test_a_task_whose_server_was_killed_is_failed_and_its_streams_end(
        start_server: Any, connect: Connect, gates: Any, shared_storage: str) -> None:
    storage = shared_storage
    owner = start_server(TARGET, storage, *A2A)
    follower_server = start_server(TARGET, storage, *A2A)
    task = await one_task(await connect(owner.url), message(
        "hold:k1", context_id="ctx-kill", return_immediately=True))
    await asyncio.to_thread(gates.wait_entered, "k1")
    follower = Stream((await connect(follower_server.url, streaming=True)).subscribe(
        a2a_pb2.SubscribeToTaskRequest(id=task.id)))
    assert await follower.started()
    owner.process.kill()
    owner.process.wait()
    seen = await follower.ended()  # a stream never waits on a dead owner
    assert last_status(seen) == FAILED, (seen, follower.error)
    restarted = await connect(start_server(TARGET, storage, *A2A).url)
    failed = await restarted.get_task(a2a_pb2.GetTaskRequest(id=task.id))
    assert failed.status.state == FAILED
    assert "stopped" in " ".join(p.text for p in failed.status.message.parts)
    started = time.monotonic()
    with pytest.raises(UnsupportedOperationError, match="FAILED"):
        _ = [e async for e in (await connect(follower_server.url, streaming=True)).subscribe(
            a2a_pb2.SubscribeToTaskRequest(id=task.id))]
    assert time.monotonic() - started < 10.0
    after = await one_task(restarted, message("next", context_id="ctx-kill"))
    assert (after.status.state, texts(after)) == (COMPLETED, ["echo: next"])


async def test_a_continuation_whose_server_was_killed_is_input_required_again(
        start_server: Any, connect: Connect, gates: Any, tmp_path: Path) -> None:
    storage = f"file:{tmp_path / 'shared'}"
    owner = start_server(TARGET, storage, *A2A)
    client = await connect(owner.url)
    paused = await one_task(client, message("ask:k2", context_id="ctx-kill-2"))
    hold = Path(gates.folder) / "k2.hold"
    hold.write_text("hold the answer")
    await one_task(client, answer(paused, True, return_immediately=True))
    await asyncio.to_thread(gates.wait_entered, "k2")
    owner.process.kill()
    owner.process.wait()
    restarted = await connect(start_server(TARGET, storage, *A2A).url)
    again = await restarted.get_task(a2a_pb2.GetTaskRequest(id=paused.id))
    assert again.status.state == INPUT_REQUIRED and request_id(again) == request_id(paused)
    hold.unlink()
    done = await one_task(restarted, answer(again, True))
    assert (done.status.state, texts(done)) == (COMPLETED, ["published"])
    assert runs(gates, "answer-k2") == 2  # the killed answer was never acknowledged


# -- a second server follows and cancels ------------------------------------------------------

async def test_a_second_server_follows_a_running_task_to_its_end(
        start_server: Any, connect: Connect, gates: Any, shared_storage: str) -> None:
    storage = shared_storage
    owner = start_server(TARGET, storage, *A2A)
    other = start_server(TARGET, storage, *A2A)
    task = await one_task(await connect(owner.url), message(
        "hold:f1", context_id="ctx-follow", return_immediately=True))
    await asyncio.to_thread(gates.wait_entered, "f1")
    follower = Stream((await connect(other.url, streaming=True)).subscribe(
        a2a_pb2.SubscribeToTaskRequest(id=task.id)))
    try:
        assert await follower.started()
        assert follower.events[0].task.status.state in LIVE
    finally:
        gates.release("f1")
    seen = await follower.ended()
    assert follower.error is None, follower.error
    assert [p.text for e in seen if e.HasField("artifact_update")
            for p in e.artifact_update.artifact.parts] == ["released"]
    assert last_status(seen) == COMPLETED


async def test_a_second_server_cancels_a_running_task_within_about_a_second(
        start_server: Any, connect: Connect, gates: Any, shared_storage: str) -> None:
    storage = shared_storage
    owner = start_server(TARGET, storage, *A2A)
    other = start_server(TARGET, storage, *A2A)
    task = await one_task(await connect(owner.url), message(
        "spin:x1", context_id="ctx-xcancel", return_immediately=True))
    ticks = Path(gates.folder) / "x1.ticks"
    await wait_for_file(ticks)
    remote = await connect(other.url)
    asked = time.monotonic()
    canceled = await remote.cancel_task(a2a_pb2.CancelTaskRequest(id=task.id))
    assert canceled.status.state == CANCELED
    # effective: the owner stopped the run and freed the context
    local = await connect(owner.url)
    end = asked + DEADLINE
    while True:
        try:
            after = await one_task(local, message("next", context_id="ctx-xcancel"))
            break
        except UnsupportedOperationError as busy:
            assert "busy" in str(busy) and time.monotonic() < end, busy
            await asyncio.sleep(0.05)
    took = time.monotonic() - asked
    assert took < 3.0, f"the cancel took {took:.1f} s"
    assert texts(after) == ["echo: next"]
    stopped_at = int(ticks.read_text())
    seen = await conversation(owner.url, "ctx-xcancel")
    assert "spun" not in seen["outputs"] and stopped_at < SPINS
    final = await local.get_task(a2a_pb2.GetTaskRequest(id=task.id))
    assert final.status.state == CANCELED


# -- SIGTERM: a running stream ends with a status update --------------------------------------

async def test_sigterm_ends_a_running_stream_with_a_final_status(
        start_server: Any, connect: Connect, gates: Any, tmp_path: Path) -> None:
    storage = f"file:{tmp_path / 'shared'}"
    server = start_server(TARGET, storage, *A2A, "--shutdown-timeout", "3")
    stream = Stream((await connect(server.url, streaming=True)).send_message(
        message("hold:t1", context_id="ctx-term")))
    assert await stream.started()
    await asyncio.to_thread(gates.wait_entered, "t1")
    server.process.send_signal(signal.SIGTERM)
    asked = time.monotonic()
    seen = await stream.ended()
    took = time.monotonic() - asked
    assert stream.error is None, stream.error
    state = last_status(seen)
    assert state in (FAILED, CANCELED), seen[-1:]
    assert took < 3.0 + 5.0, f"the stream ended {took:.1f} s after SIGTERM"
    assert server.process.wait(DEADLINE) is not None
    restarted = start_server(TARGET, storage, *A2A)
    task_id = seen[0].task.id
    got = await (await connect(restarted.url)).get_task(a2a_pb2.GetTaskRequest(id=task_id))
    assert got.status.state == state
    assert "released" not in (await conversation(restarted.url, "ctx-term",
                                                  may_be_empty=True))["outputs"]



# -- a client that goes away does not stop its task -------------------------------------------

async def test_a_task_runs_to_its_end_after_its_stream_client_went_away(
        start_server: Any, gates: Any) -> None:
    server = start_server(TARGET, None, *A2A)
    http = httpx.AsyncClient(timeout=DEADLINE)
    client = await ClientFactory(ClientConfig(
        httpx_client=http, streaming=True,
        supported_protocol_bindings=[TransportProtocol.JSONRPC.value])).create_from_url(
        server.url)
    stream = Stream(client.send_message(message("hold:d1", context_id="ctx-gone")))
    assert await stream.started()
    task_id = stream.events[0].task.id
    await asyncio.to_thread(gates.wait_entered, "d1")
    stream.cancel()
    await http.aclose()  # the connection is gone
    gates.release("d1")
    async with httpx.AsyncClient(timeout=DEADLINE) as other:
        reader = await ClientFactory(ClientConfig(
            httpx_client=other,
            supported_protocol_bindings=[TransportProtocol.JSONRPC.value])).create_from_url(
            server.url)
        end = time.monotonic() + DEADLINE
        while (got := await reader.get_task(a2a_pb2.GetTaskRequest(id=task_id))
               ).status.state in LIVE:
            assert time.monotonic() < end, got
            await asyncio.sleep(0.05)
    assert (got.status.state, texts(got)) == (COMPLETED, ["released"])
