"""End to end: httpx against ``python -m checkflow serve`` (uvicorn, loopback, real files).

Races hold the first run on a marker-file gate (the workflow waits for the test to release
it); nothing here sleeps to make requests overlap.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import httpx

Start = Any  # the start_server fixture's callable
Gates = Any  # the gates fixture (marker-file gates, tests/e2e/conftest.py)


def _runs(url: str, conversation: str) -> str:
    return f"{url}/v1/conversations/{conversation}/runs"


async def _snapshots(client: httpx.AsyncClient, url: str, conversation: str) -> list[dict]:
    response = await client.get(f"{url}/v1/conversations/{conversation}/snapshots")
    assert response.status_code == 200
    return response.json()["snapshots"]


def _assert_linear(snapshots: list[dict]) -> None:
    """No lost or forked commit: one root, every snapshot at most one child, one tip."""
    children: dict[str | None, int] = {}
    for s in snapshots:
        children[s["parent_snapshot_id"]] = children.get(s["parent_snapshot_id"], 0) + 1
    assert children.get(None) == 1
    assert all(count == 1 for count in children.values())
    ids = {s["snapshot_id"] for s in snapshots}
    assert all(s["parent_snapshot_id"] in ids for s in snapshots if s["parent_snapshot_id"])
    assert [s["is_head"] for s in snapshots].count(True) == 1


async def test_an_approval_survives_a_server_restart(start_server: Start) -> None:
    first = start_server("samples.approval:workflow")
    async with httpx.AsyncClient(timeout=60) as client:
        paused = (await client.post(_runs(first.url, "order-7"), json={"message": "cats"})).json()
        assert paused["status"] == "awaiting_responses"
        request_id = paused["pending_requests"][0]["request_id"]
        first.stop()
        second = start_server("samples.approval:workflow")
        state = (await client.get(f"{second.url}/v1/conversations/order-7")).json()
        assert state["pending_requests"][0]["request_id"] == request_id
        done = await client.post(_runs(second.url, "order-7"), json={
            "responses": {request_id: True}, "resume_token": paused["resume_token"]})
        assert done.status_code == 200
        assert done.json()["status"] == "idle"
        assert done.json()["outputs"] == ["published: Five things to know about cats."]
        _assert_linear(await _snapshots(client, second.url, "order-7"))


async def test_two_hundred_concurrent_conversations_all_complete(start_server: Start) -> None:
    server = start_server()
    limits = httpx.Limits(max_connections=200)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        responses = await asyncio.gather(*(
            client.post(_runs(server.url, f"c-{i}"), json={"message": f"m{i}"})
            for i in range(200)))
        assert [r.status_code for r in responses] == [200] * 200
        assert [r.json()["outputs"] for r in responses] == [[f"M{i}"] for i in range(200)]
        for i in (0, 99, 199):
            assert len(await _snapshots(client, server.url, f"c-{i}")) == 4


async def test_twenty_requests_to_one_conversation_make_one_run(
    start_server: Start, gates: Gates
) -> None:
    server = start_server()
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=40)) as client:
        held = asyncio.create_task(
            client.post(_runs(server.url, "one"), json={"message": "hold:one"}))
        await asyncio.to_thread(gates.wait_entered, "one")
        refused = await asyncio.gather(*(
            client.post(_runs(server.url, "one"), json={"message": "again"})
            for _ in range(19)))
        assert [r.status_code for r in refused] == [409] * 19
        assert all(r.json()["error"]["code"] == "conversation_busy" for r in refused)
        assert all(int(r.headers["retry-after"]) >= 1 for r in refused)
        gates.release("one")
        assert (await held).json()["outputs"] == ["HOLD:ONE"]
        snapshots = await _snapshots(client, server.url, "one")
        assert len(snapshots) == 4  # exactly one run: entry + three supersteps
        _assert_linear(snapshots)


async def test_two_servers_sharing_one_storage_refuse_the_second_run(
    start_server: Start, gates: Gates
) -> None:
    a, b = start_server(), start_server()
    async with httpx.AsyncClient(timeout=120) as client:
        await client.post(_runs(a.url, "shared"), json={"message": "first"})
        held = asyncio.create_task(
            client.post(_runs(a.url, "shared"), json={"message": "hold:shared"}))
        await asyncio.to_thread(gates.wait_entered, "shared")
        refused = await client.post(_runs(b.url, "shared"), json={"message": "second"})
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "conversation_busy"
        gates.release("shared")
        assert (await held).status_code == 200
        after = await client.post(_runs(b.url, "shared"), json={"message": "third"})
        assert after.json()["outputs"] == ["THIRD"]
        snapshots = await _snapshots(client, b.url, "shared")
        assert len(snapshots) == 12  # three runs, none lost, none forked
        _assert_linear(snapshots)
        state = (await client.get(f"{a.url}/v1/conversations/shared")).json()
        assert state["outputs"] == ["FIRST", "HOLD:SHARED", "THIRD"]


async def test_branching_over_http_leaves_two_tips(start_server: Start) -> None:
    server = start_server()
    async with httpx.AsyncClient(timeout=60) as client:
        first = (await client.post(_runs(server.url, "b"), json={"message": "one"})).json()
        await client.post(_runs(server.url, "b"), json={"message": "two"})
        stale = await client.post(_runs(server.url, "b"), json={
            "message": "x", "resume_token": first["resume_token"]})
        assert stale.status_code == 409
        assert stale.json()["error"]["code"] == "stale_resume_token"
        branched = await client.post(_runs(server.url, "b"), json={
            "message": "other", "from_snapshot": first["resume_token"]["snapshot_id"]})
        assert branched.json()["outputs"] == ["OTHER"]
        snapshots = await _snapshots(client, server.url, "b")
        parents = {s["parent_snapshot_id"] for s in snapshots}
        tips = [s for s in snapshots if s["snapshot_id"] not in parents]
        assert len(tips) == 2
        assert len(snapshots) == 12


async def test_a_ten_megabyte_body_is_refused_with_413(start_server: Start) -> None:
    server = start_server()
    body = b'{"message": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.post(_runs(server.url, "big"), content=body,
                                     headers={"content-type": "application/json"})
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "body_too_large"
        assert (await client.get(f"{server.url}/healthz")).status_code == 200


async def test_the_authenticate_option_scopes_conversations_by_principal(
    start_server: Start,
) -> None:
    server = start_server("e2e_flows:workflow", None, "--authenticate",
                          "e2e_flows:authenticate")
    alice, bob = {"authorization": "Bearer alice"}, {"authorization": "Bearer bob"}
    async with httpx.AsyncClient(timeout=60) as client:
        anonymous = await client.post(_runs(server.url, "c"), json={"message": "x"})
        assert anonymous.status_code == 401
        ran = await client.post(_runs(server.url, "c"), json={"message": "mine"}, headers=alice)
        assert ran.json()["outputs"] == ["MINE"]
        other = await client.get(f"{server.url}/v1/conversations/c", headers=bob)
        assert other.status_code == 404


def test_the_checkpoints_command_reads_what_the_server_wrote(
    start_server: Start, tmp_path: Path
) -> None:
    server = start_server()
    with httpx.Client(timeout=60) as client:
        done = client.post(_runs(server.url, "c"), json={"message": "x"}).json()
    checkpoint_id = done["resume_token"]["checkpoint_id"]
    storage = f"file:{tmp_path / 'store'}"

    def command(*argv: str) -> str:
        return subprocess.run([sys.executable, "-m", "checkflow", "checkpoints", *argv,
                               "--storage", storage], capture_output=True, text=True,
                              check=True, timeout=120).stdout

    assert command("ls").split() == [checkpoint_id, "conversation=c", "principal=-"]
    tree = command("tree", checkpoint_id).splitlines()
    assert len(tree) == 4 and tree[-1].endswith("<- head")
    shown = json.loads(command("show", checkpoint_id, "--json"))
    assert shown["status"] == "idle"
    assert shown["head_snapshot_id"] == done["resume_token"]["snapshot_id"]


async def test_a_client_that_disconnects_mid_stream_frees_the_conversation(
    start_server: Start, gates: Gates
) -> None:
    server = start_server()
    async with httpx.AsyncClient(timeout=60) as client:
        first = (await client.post(_runs(server.url, "s"), json={"message": "one"})).json()
        async with client.stream("POST", _runs(server.url, "s") + "?stream=true",
                                 json={"message": "hold:s"}) as response:
            async for line in response.aiter_lines():
                if line == "event: ExecutorInvokedEvent":
                    break  # the start executor is being invoked: it heads for its gate
            await asyncio.to_thread(gates.wait_entered, "s")
            # leaving the block drops the connection while the run waits at its gate
        deadline = asyncio.get_running_loop().time() + 60
        while True:  # poll until the server noticed the disconnect and released the run
            after = await client.post(_runs(server.url, "s"), json={"message": "after"})
            if after.status_code != 409:
                break
            assert asyncio.get_running_loop().time() < deadline, "never released"
            await asyncio.sleep(0.05)
        assert after.status_code == 200
        assert after.json()["outputs"] == ["AFTER"]
        state = (await client.get(f"{server.url}/v1/conversations/s")).json()
        assert state["outputs"] == ["ONE", "AFTER"]
        assert first["resume_token"]["checkpoint_id"] == state["resume_token"]["checkpoint_id"]


async def test_any_conversation_id_works_over_a_real_server(start_server: Start) -> None:
    server = start_server()
    weird = "x/snapshots?a=1#é %"
    base = f"{server.url}/v1/conversations/{urllib.parse.quote(weird, safe='')}"
    async with httpx.AsyncClient(timeout=60) as client:
        ran = await client.post(base + "/runs?stream=false", json={"message": "odd"})
        assert ran.json()["conversation_id"] == weird
        assert (await client.get(base)).json()["outputs"] == ["ODD"]
        assert len((await client.get(base + "/snapshots")).json()["snapshots"]) == 4
