"""Store trips of one hosted turn per protocol (issue 27): counted, in order, on real stores.

The host's session store and checkpoint storage are wrapped in counters
(``store_counters``) and one conversation (``agui_flows.approval``: a message that pauses
for a bool, then the answer) is held over AG-UI, A2A and Responses in process (httpx over
ASGI against ``create_app`` with the three adapters). Each turn must load the checkpoint
once (the answer; the opening turn of a new conversation has none to load), read the session
store at most once besides its lease's read, and write nothing after its first snapshot
commit but its own session (the release): whatever a protocol needs later is derived from
the checkpoint or committed with it (docs/adr/0002). The native API's turns are the control,
and made-up call logs show the checks refusing what they must refuse. A failure names every
count and lists the calls in order.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")
pytest.importorskip("ag_ui")

from store_counters import Call, CallLog, Trips, TurnTripsError, counting_stores

from checkflow.adapters.a2a import A2AAdapter
from checkflow.adapters.agui import AGUIAdapter
from checkflow.adapters.foundry import FoundryAdapter
from checkflow.hosting import WorkflowHost, create_app
from checkflow.sessions import InMemorySessionStore
from checkflow.storage import InMemoryCheckpointStorage
from tests.e2e.agui_flows import approval

TOPIC = "owls"
PUBLISHED = f"published: Five things about {TOPIC}."


@dataclass
class Served:
    client: httpx.AsyncClient
    log: CallLog

    async def post(self, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
        """One request, then the loop is let run until the stores see nothing more (work the
        app left running after its answer is part of the turn)."""
        response = await self.client.post(path, json=body, headers=headers)
        quiet, seen = 0, len(self.log.calls)
        for _ in range(2_000):
            await asyncio.sleep(0)
            quiet = quiet + 1 if len(self.log.calls) == seen else 0
            seen = len(self.log.calls)
            if quiet >= 50:
                break
        return response


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    log, sessions, storage = counting_stores(InMemorySessionStore(),
                                             InMemoryCheckpointStorage())
    host = WorkflowHost(approval, session_store=sessions, checkpoint_storage=storage)
    app = create_app(host, adapters=[AGUIAdapter(), A2AAdapter(), FoundryAdapter()])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://trips.test", timeout=30) as client:
        yield Served(client, log)


# -- one conversation per protocol: the opening turn (it pauses), then the answer -----------


@dataclass
class Paused:
    conversation_id: str
    answer: dict[str, Any]  # what the answering turn needs


async def native_open(served: Served) -> Paused:
    reply = await served.post("/v1/conversations/native-1/runs", {"message": TOPIC})
    assert reply.status_code == 200 and reply.json()["status"] == "awaiting_responses", reply.text
    (request,) = reply.json()["pending_requests"]
    return Paused("native-1", {"request_id": request["request_id"]})


async def native_answer(served: Served, paused: Paused) -> None:
    reply = await served.post(f"/v1/conversations/{paused.conversation_id}/runs",
                              {"responses": {paused.answer["request_id"]: True}})
    assert reply.status_code == 200 and reply.json()["outputs"] == [PUBLISHED], reply.text


def _run_input(thread: str, **fields: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": uuid.uuid4().hex, "messages": [], "state": {},
            "tools": [], "context": [], "forwardedProps": {}, **fields}


def _events(reply: httpx.Response) -> list[dict[str, Any]]:
    assert reply.status_code == 200, reply.text
    return [json.loads(line[5:]) for line in reply.text.split("\n") if line.startswith("data:")]


async def agui_open(served: Served) -> Paused:
    events = _events(await served.post("/agui", _run_input(
        "thread-1", messages=[{"id": "m1", "role": "user", "content": TOPIC}]),
        accept="text/event-stream"))
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED", events
    (interrupt,) = finished["outcome"]["interrupts"]
    history = next(e["messages"] for e in events if e["type"] == "MESSAGES_SNAPSHOT")
    return Paused("thread-1", {"interrupt_id": interrupt["id"], "history": history})


async def agui_answer(served: Served, paused: Paused) -> None:
    events = _events(await served.post("/agui", _run_input(
        paused.conversation_id, messages=paused.answer["history"],
        resume=[{"interruptId": paused.answer["interrupt_id"], "status": "resolved",
                 "payload": True}]), accept="text/event-stream"))
    said = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert events[-1]["type"] == "RUN_FINISHED" and said == PUBLISHED, events


def _send_message(**message: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "SendMessage",
            "params": {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                                   **message}}}


async def a2a_open(served: Served) -> Paused:
    reply = await served.post("/a2a", _send_message(contextId="context-1",
                                                    parts=[{"text": TOPIC}]),
                              **{"A2A-Version": "1.0"})
    task = reply.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", reply.text
    (request_id,) = task["metadata"]["checkflow"]["pendingRequestIds"]
    return Paused("context-1", {"task_id": task["id"], "request_id": request_id})


async def a2a_answer(served: Served, paused: Paused) -> None:
    reply = await served.post("/a2a", _send_message(
        contextId=paused.conversation_id, taskId=paused.answer["task_id"],
        parts=[{"data": {paused.answer["request_id"]: True}}]), **{"A2A-Version": "1.0"})
    task = reply.json()["result"]["task"]
    texts = [p.get("text") for a in task.get("artifacts", []) for p in a["parts"]]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and texts == [PUBLISHED], reply.text


async def responses_open(served: Served) -> Paused:
    reply = await served.post("/responses", {"input": TOPIC})
    assert reply.status_code == 200, reply.text
    paused = reply.json()
    (call,) = [i for i in paused["output"] if i["type"] == "mcp_approval_request"]  # a yes/no
    return Paused(paused["conversation"]["id"],
                  {"response_id": paused["id"], "call_id": call["id"]})


async def responses_answer(served: Served, paused: Paused) -> None:
    reply = await served.post("/responses", {
        "previous_response_id": paused.answer["response_id"],
        "input": [{"type": "mcp_approval_response",
                   "approval_request_id": paused.answer["call_id"], "approve": True}]})
    assert reply.status_code == 200, reply.text
    texts = [c["text"] for i in reply.json()["output"] if i["type"] == "message"
             for c in i["content"] if c["type"] == "output_text"]
    assert texts == [PUBLISHED], reply.text


Opening = Callable[[Served], Awaitable[Paused]]
Answering = Callable[[Served, Paused], Awaitable[None]]
CONVERSATIONS: dict[str, tuple[Opening, Answering]] = {
    "native": (native_open, native_answer), "agui": (agui_open, agui_answer),
    "a2a": (a2a_open, a2a_answer), "responses": (responses_open, responses_answer)}


@pytest.mark.parametrize("protocol", list(CONVERSATIONS))
async def test_an_opening_turn_reads_once_besides_its_lease_and_writes_only_its_session(
        served: Served, protocol: str) -> None:
    opening, _ = CONVERSATIONS[protocol]
    paused = await opening(served)
    # a new conversation has no checkpoint to load yet
    Trips.of(served.log, paused.conversation_id).check(loads=0, what=f"{protocol} opening")


@pytest.mark.parametrize("protocol", list(CONVERSATIONS))
async def test_an_answering_turn_loads_once_reads_once_besides_its_lease_writes_its_session(
        served: Served, protocol: str) -> None:
    opening, answering = CONVERSATIONS[protocol]
    paused = await opening(served)
    served.log.clear()
    await answering(served, paused)
    Trips.of(served.log, paused.conversation_id).check(loads=1, what=f"{protocol} answer")


# -- the counters and the checks themselves ---------------------------------------------------


async def test_the_counters_see_every_call_and_the_commits_of_a_loaded_checkpoint(
        served: Served) -> None:
    paused = await native_open(served)
    served.log.clear()
    await native_answer(served, paused)
    calls = [f"{c.store}.{c.method}" for c in served.log.calls]
    load = calls.index("checkpoints.load")
    assert "checkpoints.commit_snapshot" in calls[load:], calls  # commits of what it loaded
    assert served.log.count("sessions")["set"] >= 2, calls  # the lease and its release


def _log(*calls: Call) -> CallLog:
    return CallLog(list(calls))


_OWN, _RECORD = "conversation-a", "record-b"
_LEASE = (Call("sessions", "get", _OWN), Call("sessions", "set", _OWN, "c"))


def test_a_record_written_after_the_commit_is_refused_by_name() -> None:
    log = _log(*_LEASE, Call("checkpoints", "commit_snapshot", "cp"),
               Call("sessions", "set", _OWN, "c"), Call("sessions", "set", _RECORD))
    with pytest.raises(TurnTripsError, match=f"not the session's own: sessions.set\\({_RECORD}"):
        Trips.of(log, "c").check(loads=0, what="made up")


def test_a_second_read_besides_the_lease_and_a_second_load_are_refused() -> None:
    log = _log(Call("sessions", "get", _RECORD), Call("sessions", "get", _OWN), *_LEASE,
               Call("checkpoints", "load", "cp"), Call("checkpoints", "load", "cp"),
               Call("checkpoints", "commit_snapshot", "cp"))
    with pytest.raises(TurnTripsError) as raised:
        Trips.of(log, "c").check(loads=1, what="made up")
    assert "checkpoint loads: 2 (want 1)" in str(raised.value)
    assert "session reads besides the lease's: 2" in str(raised.value)


def test_one_read_besides_the_lease_one_load_and_the_release_pass() -> None:
    log = _log(Call("sessions", "get", _RECORD), *_LEASE, Call("checkpoints", "load", "cp"),
               Call("checkpoints", "commit_snapshot", "cp"),
               Call("checkpoints", "commit_snapshot", "cp"), Call("sessions", "set", _OWN, "c"))
    Trips.of(log, "c").check(loads=1, what="made up")
