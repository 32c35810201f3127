"""The support sample's tools over the native API of a real server: a pause answered after a
restart, and kills while a tool runs and after its result was committed (marker-file gates)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from support_ledger import paid

Start = Any  # the start_server fixture's callable
Gates = Any

ASK = {"message": "Please refund order 1001"}


def approval(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (pending,) = body["pending_requests"]
    return pending["request_id"], pending["data"]["data"]


async def test_an_approval_answered_by_a_restarted_server_refunds_once(
        start_server: Start, ledger: Path) -> None:
    first = start_server("samples.support:workflow")
    async with httpx.AsyncClient(timeout=60) as http:
        paused = (await http.post(f"{first.url}/v1/conversations/c1/runs", json=ASK)).json()
        assert paused["status"] == "awaiting_responses", paused
        call_id, asked = approval(paused)
        assert asked == {"tool_name": "refund", "call_id": call_id, "arguments": {
            "order_id": "1001", "amount": 40.0}, "description": (
            "Refund an amount on an order (a person approves every refund first).")}
        first.stop()
        second = start_server("samples.support:workflow")
        url = f"{second.url}/v1/conversations/c1/runs"
        bad = await http.post(url, json={"responses": {call_id: {"approved": "yes"}}})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_response"
        done = (await http.post(url, json={"responses": {call_id: {"approved": True}}})).json()
        assert done["status"] == "idle", done
        assert done["outputs"][0]["messages"][0]["contents"][0]["text"] == (
            "Refunded 40.00 on order 1001.")
        again = await http.post(url, json={"responses": {call_id: {"approved": True}}})
        assert again.status_code == 409, again.text  # answered already: nothing runs again
    assert [r["call_id"] for r in paid(ledger)] == [call_id]


@pytest.mark.parametrize("kill_at", ["refund", "answer"])
async def test_a_server_killed_around_a_tool_call_resumes_and_refunds_once(
        start_server: Start, gates: Gates, ledger: Path, kill_at: str) -> None:
    (gates.folder / f"hold-{kill_at}").write_text("hold")
    server = start_server("tool_flows:workflow")
    async with httpx.AsyncClient(timeout=60) as http:
        url = f"{server.url}/v1/conversations/c1/runs"
        call_id, _ = approval((await http.post(url, json=ASK)).json())
        answer = http.post(url, json={"responses": {call_id: {"approved": True}}})
        answering = asyncio.ensure_future(answer)
        await asyncio.to_thread(gates.wait_entered, "refund-0" if kill_at == "refund"
                                else "answer")
        server.process.send_signal(signal.SIGKILL)
        with pytest.raises(httpx.HTTPError):
            await answering  # the answer was committed; its turn never finished
        server.process.wait(30)
        (gates.folder / f"hold-{kill_at}").unlink()
        (gates.folder / "answer.release").write_text("go")
        restarted = start_server("tool_flows:workflow")
        base = f"{restarted.url}/v1/conversations/c1"
        state = (await http.get(base)).json()
        # the conversation stays at its last acknowledged head (the pause, asked again);
        # storage's head is ahead: the cut turn's last commit, which the client continues
        assert state["status"] == "awaiting_responses", state
        ahead = state["storage_head_snapshot_id"]
        assert ahead != state["resume_token"]["snapshot_id"]
        done = (await http.post(f"{base}/runs", json={"from_snapshot": ahead})).json()
        assert done["status"] == "idle", done
        assert done["outputs"][-1]["messages"][0]["contents"][0]["text"] == (
            "Refunded 40.00 on order 1001.")
    entered = sorted(gates.folder.glob("refund-*.entered"))
    ran = [p.read_text() for p in entered]
    if kill_at == "refund":  # cut mid-call: it ran again, under the same call id
        assert ran == [call_id, call_id]
    else:  # its result was committed: it never ran again
        assert ran == [call_id]
    assert [r["call_id"] for r in paid(ledger)] == [call_id]  # paid once either way
