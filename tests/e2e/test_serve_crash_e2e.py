"""A durable server SIGKILLed under load loses no acknowledged turn (real files, loopback).

Eight clients drive conversations of several turns against ``serve --storage file:``; once a
bounded number of turns were acknowledged, the server is killed mid-load (nothing sleeps: the
kill follows the count). A restarted server on the same folder must show every conversation
at its last acknowledged head or a later committed one, and must take each one on at once
(the dead owner's leases are recognised as gone).
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import httpx

Start = Any  # the start_server fixture's callable

CLIENTS, TURNS, CONVERSATIONS, KILL_AFTER = 8, 3, 20, 60  # bounded: 8 x 20 x 3 turns at most


async def test_a_server_killed_under_load_keeps_every_acknowledged_turn(
    start_server: Start,
) -> None:
    server = start_server()
    acked: dict[str, str] = {}  # conversation -> last acknowledged snapshot id
    enough = asyncio.Event()

    async def client(index: int, http: httpx.AsyncClient) -> None:
        for n in range(CONVERSATIONS):
            conversation = f"k-{index}-{n}"
            for turn in range(TURNS):
                try:
                    response = await http.post(f"{server.url}/v1/conversations/"
                                               f"{conversation}/runs",
                                               json={"message": f"m{turn}"})
                except httpx.HTTPError:
                    return  # the server is gone
                assert response.status_code == 200, response.text
                assert response.json()["outputs"] == [f"M{turn}"]
                acked[conversation] = response.json()["resume_token"]["snapshot_id"]
                if len(acked) * TURNS >= KILL_AFTER:
                    enough.set()

    async with httpx.AsyncClient(timeout=60,
                                 limits=httpx.Limits(max_connections=CLIENTS)) as http:
        load = asyncio.gather(*(client(i, http) for i in range(CLIENTS)))
        await asyncio.wait_for(enough.wait(), 120)
        server.process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(load, 60)
        server.process.wait(10)
        restarted = start_server()
        assert acked
        for conversation, snapshot_id in acked.items():
            base = f"{restarted.url}/v1/conversations/{conversation}"
            state = await http.get(base)
            assert state.status_code == 200, (conversation, state.text)
            snapshots = (await http.get(f"{base}/snapshots")).json()["snapshots"]
            lineage = _lineage(snapshots, state.json()["resume_token"]["snapshot_id"])
            assert snapshot_id in lineage, conversation  # the acknowledged head survived
            again = await http.post(f"{base}/runs", json={"message": "after"})
            assert again.status_code == 200, (conversation, again.text)  # no stale lease
            assert again.json()["outputs"] == ["AFTER"]


def _lineage(snapshots: list[dict[str, Any]], head: str) -> set[str]:
    parents = {s["snapshot_id"]: s["parent_snapshot_id"] for s in snapshots}
    seen: set[str] = set()
    current: str | None = head
    while current is not None and current not in seen and len(seen) <= len(parents):
        seen.add(current)
        current = parents.get(current)
    return seen
