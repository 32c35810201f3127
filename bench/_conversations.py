"""One approval conversation per protocol, as a client of that protocol sends it.

A conversation is a message that pauses for approval (``agui_flows:approval`` asks a bool),
then the answer: two requests, each timed into ``latencies``. Every answer is checked (the
pause, then ``published: Five things about <topic>.``): a wrong one raises
``ConversationError``, which ``bench/hosting.py`` counts and shows instead of measuring it.
Used by ``bench/hosting.py`` and ``bench/_asgi_turns.py``.

- ``native``: ``POST /v1/conversations/{id}/runs`` with the message, then the responses.
- ``agui``: the AG-UI ``RunAgentInput`` to ``POST /agui``, its SSE read to ``RUN_FINISHED``;
  the answer is a ``resume`` of the interrupt, sent with the thread's messages so far (the
  ``MESSAGES_SNAPSHOT``), as ``@ag-ui/client`` resends the history.
- ``a2a``: JSON-RPC ``SendMessage`` (blocking) to ``POST /a2a``, then a message with the
  ``INPUT_REQUIRED`` task's id and a data part answering its pending request.
- ``responses``: ``POST /responses``, then ``function_call_output`` with
  ``previous_response_id``.
- ``bare``: the bare endpoint's two requests (``bench/_bare_server.py``), nothing checked.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol


class Http(Protocol):
    """What a conversation needs of its connection (``_wire.Connection``, or
    ``_asgi_turns.AsgiConnection`` in process)."""

    async def post_json(self, path: str, body: dict[str, Any],
                        headers: dict[str, str] | None = None) -> tuple[int, Any]: ...

    async def post_events(self, path: str, body: dict[str, Any]) -> tuple[int, list[Any]]: ...


Conversation = Callable[[Http, str, list[float]], Awaitable[None]]
PROTOCOLS = ("native", "agui", "a2a", "responses")
"""The protocols a checkflow row can speak (``--protocols``)."""
ADAPTERS = "agui,a2a,foundry"
"""``serve --adapters`` for the protocol rows (``responses`` is the ``foundry`` adapter)."""


class ConversationError(Exception):
    """A server answered a conversation's request unexpectedly (says which and what)."""


def _published(topic: str) -> str:
    return f"published: Five things about {topic}."


def _expect(ok: bool, what: str, status: int, answer: object) -> None:
    if not ok:
        raise ConversationError(f"{what}: unexpected answer {status} {str(answer)[:600]}")


class _Timer:
    """Times consecutive requests of one conversation into ``latencies``."""

    def __init__(self, latencies: list[float]) -> None:
        self.latencies, self.began = latencies, time.perf_counter()

    def lap(self) -> None:
        now = time.perf_counter()
        self.latencies.append(now - self.began)
        self.began = now


async def bare(http: Http, cid: str, latencies: list[float]) -> None:
    timer, path = _Timer(latencies), f"/v1/conversations/{cid}/runs"
    for body in ({"message": cid}, {"message": "yes"}):
        status, answer = await http.post_json(path, body)
        timer.lap()
        _expect(status == 200, "bare", status, answer)


async def native(http: Http, cid: str, latencies: list[float]) -> None:
    timer, path = _Timer(latencies), f"/v1/conversations/{cid}/runs"
    status, paused = await http.post_json(path, {"message": cid})
    timer.lap()
    _expect(status == 200 and paused.get("status") == "awaiting_responses", "native pause",
            status, paused)
    (request_id,) = (r["request_id"] for r in paused["pending_requests"])
    status, done = await http.post_json(path, {"responses": {request_id: True}})
    timer.lap()
    _expect(status == 200 and done.get("outputs") == [_published(cid)], "native answer",
            status, done)


def _run_input(thread: str, **fields: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": uuid.uuid4().hex, "messages": [], "state": {},
            "tools": [], "context": [], "forwardedProps": {}, **fields}


async def agui(http: Http, cid: str, latencies: list[float]) -> None:
    timer = _Timer(latencies)
    status, events = await http.post_events("/agui", _run_input(
        cid, messages=[{"id": f"{cid}-m1", "role": "user", "content": cid}]))
    timer.lap()
    last = events[-1] if events else {}
    _expect(status == 200 and last.get("type") == "RUN_FINISHED"
            and last["outcome"]["type"] == "interrupt", "agui pause", status, events)
    (interrupt,) = last["outcome"]["interrupts"]
    history = next(e["messages"] for e in events if e["type"] == "MESSAGES_SNAPSHOT")
    status, events = await http.post_events("/agui", _run_input(
        cid, messages=history,
        resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": True}]))
    timer.lap()
    said = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    last = events[-1] if events else {}
    _expect(status == 200 and last.get("type") == "RUN_FINISHED"
            and last["outcome"]["type"] == "success" and said == _published(cid),
            "agui answer", status, events)


def _send_message(**message: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "SendMessage",
            "params": {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                                   **message}}}


_A2A_HEADERS = {"A2A-Version": "1.0"}


async def a2a(http: Http, cid: str, latencies: list[float]) -> None:
    timer = _Timer(latencies)
    status, reply = await http.post_json(
        "/a2a", _send_message(contextId=cid, parts=[{"text": cid}]), _A2A_HEADERS)
    timer.lap()
    task = reply.get("result", {}).get("task", {})
    _expect(status == 200 and task.get("status", {}).get("state")
            == "TASK_STATE_INPUT_REQUIRED", "a2a pause", status, reply)
    (request_id,) = task["metadata"]["checkflow"]["pendingRequestIds"]
    status, reply = await http.post_json("/a2a", _send_message(
        taskId=task["id"], contextId=cid, parts=[{"data": {request_id: True}}]), _A2A_HEADERS)
    timer.lap()
    task = reply.get("result", {}).get("task", {})
    texts = [p.get("text") for a in task.get("artifacts", []) for p in a["parts"]]
    _expect(status == 200 and task.get("status", {}).get("state") == "TASK_STATE_COMPLETED"
            and texts == [_published(cid)], "a2a answer", status, reply)


async def responses(http: Http, cid: str, latencies: list[float]) -> None:
    timer = _Timer(latencies)
    status, paused = await http.post_json("/responses", {"input": cid})
    timer.lap()
    calls = [i for i in paused.get("output", []) if i.get("type") == "function_call"]
    _expect(status == 200 and len(calls) == 1, "responses pause", status, paused)
    status, done = await http.post_json("/responses", {
        "previous_response_id": paused["id"],
        "input": [{"type": "function_call_output", "call_id": calls[0]["call_id"],
                   "output": "true"}]})
    timer.lap()
    texts = [c["text"] for i in done.get("output", []) if i.get("type") == "message"
             for c in i["content"] if c.get("type") == "output_text"]
    _expect(status == 200 and texts == [_published(cid)], "responses answer", status, done)


CONVERSATIONS: dict[str, Conversation] = {
    "bare": bare, "native": native, "agui": agui, "a2a": a2a, "responses": responses}
