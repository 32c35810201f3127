"""A streaming client that goes away: by default its run is cancelled at the next safe point;
with ``on_disconnect="continue"`` the run finishes and commits, and the client re-attaches
(real uvicorn on loopback; the run is held on an asyncio.Event gate)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from hosting_flows import Gate
from served import served

from checkflow.cli._main import _parser
from checkflow.cli._serve_options import serve_options
from checkflow.hosting import WorkflowHost, create_app
from checkflow.hosting._keys import ConversationKey


async def _drop_after_first_frame(url: str, gate: Gate) -> None:
    """Start a streamed turn that holds, read one frame, then disconnect."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client, client.stream(
        "POST", "/v1/conversations/c/runs?stream=true", json={"message": "hold"}
    ) as response:
        assert response.status_code == 200
        await asyncio.wait_for(gate.entered.wait(), 10)
        async for chunk in response.aiter_text():
            if "\n\n" in chunk:
                break  # and leave: the connection closes with the client


async def _settled(client: httpx.AsyncClient) -> dict[str, Any]:
    """The conversation once no turn runs (a new turn is refused 409 while one does)."""
    for _ in range(400):  # bounded: up to ~20 s
        probe = await client.post("/v1/conversations/c/cancel")
        if not probe.json()["cancelled"]:
            return dict((await client.get("/v1/conversations/c")).json())
        await asyncio.sleep(0.05)
    raise AssertionError("the turn never ended")


async def test_by_default_a_dropped_stream_cancels_its_run(
    gate: Gate, host: WorkflowHost
) -> None:
    async with served(create_app(host)) as (url, _server), \
            httpx.AsyncClient(base_url=url, timeout=30) as client:
        first = (await client.post("/v1/conversations/c/runs", json={"message": "one"})).json()
        await _drop_after_first_frame(url, gate)
        key = ConversationKey(None, "c")
        for _ in range(400):  # bounded: the server notices the disconnect and cancels
            if host._runs.get(key) is None:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the dropped stream's run was never cancelled")
        assert gate.release.is_set() is False  # it ended without the gate opening
        gate.release.set()
        state = await _settled(client)
        assert state["outputs"] == ["ONE"]  # the held turn committed nothing visible
        assert state["resume_token"] == first["resume_token"]


async def test_with_continue_a_dropped_stream_lets_the_run_finish_and_commit(
    gate: Gate, host: WorkflowHost
) -> None:
    async with served(create_app(host, on_disconnect="continue")) as (url, _server), \
            httpx.AsyncClient(base_url=url, timeout=30) as client:
        await client.post("/v1/conversations/c/runs", json={"message": "one"})
        await _drop_after_first_frame(url, gate)
        async with client.stream("GET", "/v1/conversations/c/events",
                                 params={"after": "0"}) as events:
            gate.release.set()  # the client is gone; the run goes on
            text = "".join([chunk async for chunk in events.aiter_text()])
        assert "event: OutputEvent" in text  # re-attached, and saw the turn to its end
        state = await _settled(client)
        assert state["outputs"] == ["ONE", "HOLD"] and state["status"] == "idle"


def test_serve_takes_on_disconnect() -> None:
    args = _parser().parse_args(["serve", "m:a", "--on-disconnect", "continue"])
    assert serve_options(args, {}).on_disconnect == "continue"
    assert serve_options(_parser().parse_args(["serve", "m:a"]), {}).on_disconnect == "cancel"


def test_an_unknown_policy_is_refused(host: WorkflowHost) -> None:
    with pytest.raises(ValueError, match="on_disconnect"):
        create_app(host, on_disconnect="ignore")
