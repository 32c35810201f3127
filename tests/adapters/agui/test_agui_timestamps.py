"""Every AG-UI event carries ``timestamp``: milliseconds since the epoch, within the request.

Each kind of stream the endpoint answers (a run, a pause, a resume, a replay, a refusal, a
reconnect, a workflow failure) is read with the AG-UI 1.0 models, as a consumer reads it.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
from ag_ui.core import Event
from pydantic import TypeAdapter

from checkflow.adapters.agui import AGUIAdapter
from checkflow.hosting import WorkflowHost, create_app
from tests.e2e.agui_flows import approval
from tests.e2e.agui_wire import parse_sse

EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def _input(thread: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": f"run-{uuid.uuid4().hex[:8]}", "messages": messages,
            **extra}


def _user(text: str) -> dict[str, Any]:
    return {"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}


def _millis() -> int:
    return time.time_ns() // 1_000_000


async def _stamped(client: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    """POST one run; assert every event is a valid AG-UI event stamped during the request."""
    before = _millis()
    response = await client.post("/agui", json=body)
    after = _millis()
    assert response.status_code == 200, response.text
    events = parse_sse(response.text)
    assert events
    for wire in events:
        parsed = EVENT.validate_python(wire)
        assert isinstance(parsed.timestamp, int), wire
        assert before <= parsed.timestamp <= after, (before, wire, after)
    return events


async def test_every_stream_kind_stamps_every_event_in_milliseconds() -> None:
    host = WorkflowHost(approval)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(
            app=create_app(host, adapters=[AGUIAdapter()])), base_url="http://test") as client:
        paused = await _stamped(client, _input("t", [_user("tea")]))
        (interrupt,) = paused[-1]["outcome"]["interrupts"]
        answer = [{"interruptId": interrupt["id"], "status": "resolved", "payload": True}]
        resumed = _input("t", [], resume=answer)
        done = await _stamped(client, resumed)
        replayed = await _stamped(client, resumed)  # same runId: the recorded outcome
        refused = await _stamped(client, _input("t", [], resume=answer))  # already resolved
        reconnected = await _stamped(client, _input("t", []))
        failed = await _stamped(client, _input("t", [_user("fail:tea")]))
    assert done[-1]["outcome"] == {"type": "success"}
    assert [e["type"] for e in replayed][-1] == "RUN_FINISHED"
    assert [e["type"] for e in refused] == ["RUN_STARTED", "RUN_ERROR"]
    assert reconnected[-1]["type"] == "RUN_FINISHED"
    assert failed[-1]["type"] == "RUN_ERROR"
    kinds = {e["type"] for stream in (paused, done, replayed, refused, reconnected, failed)
             for e in stream}
    assert {"RUN_STARTED", "STEP_STARTED", "STEP_FINISHED", "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT",
            "RUN_FINISHED", "RUN_ERROR"} <= kinds
