"""``python -m checkflow serve`` under pressure: out of file descriptors, SIGTERM with a turn
running, and the lease a killed server leaves (real processes on loopback, real files)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import signal
import time
from pathlib import Path
from typing import Any

import httpx

from checkflow.cli import main

Start = Any  # the start_server fixture's callable
Gates = Any

DESCRIPTORS = 96


def _few_descriptors() -> None:
    """In the child, before exec: a file-descriptor limit a few hundred requests exhaust."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


async def _request(host: str, port: int, path: str, release: asyncio.Event) -> bytes:
    """One raw request; the connection is held open until ``release`` (bounded by 10 s)."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
    except (OSError, TimeoutError):
        return b"connect failed"
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nhost: x\r\n\r\n".encode())
        await writer.drain()
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n"), 10)
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            head = b"no answer"
        await asyncio.wait_for(release.wait(), 10)
        return head
    finally:
        writer.close()


async def test_out_of_descriptors_requests_get_503_and_the_server_recovers(
    start_server: Start,
) -> None:
    server = start_server("e2e_flows:workflow", None, preexec_fn=_few_descriptors)
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    release = asyncio.Event()
    tasks = [asyncio.ensure_future(_request(host, int(port), f"/v1/conversations/c{i}", release))
             for i in range(3 * DESCRIPTORS)]  # more connections than the server has descriptors
    try:
        await asyncio.sleep(1.0)  # let the server meet every connection (no overlap relies on it)
    finally:
        release.set()
    heads = await asyncio.wait_for(asyncio.gather(*tasks), 60)
    statuses = {h.split(b" ")[1] if h.startswith(b"HTTP/1.1 ") else h for h in heads}
    assert b"503" in statuses, statuses
    assert statuses <= {b"503", b"404", b"no answer", b"connect failed"}, statuses
    assert server.process.poll() is None  # still up
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        for _ in range(200):  # bounded: health comes back once the connections are gone
            try:
                if (await client.get("/healthz")).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("health never recovered")
        ran = await client.post(f"{server.url}/v1/conversations/after/runs",
                                json={"message": "still works"})
        assert ran.status_code == 200 and ran.json()["outputs"] == ["STILL WORKS"]
    log = "".join(server.output)
    assert len(log) < 32_000, log[-3000:]  # no traceback per refused connection
    assert "Traceback" not in log


async def test_sigterm_waits_for_the_shutdown_timeout_then_cancels_the_turn(
    start_server: Start, gates: Gates, tmp_path: Path
) -> None:
    server = start_server("e2e_flows:workflow", None, "--shutdown-timeout", "1")
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        first = await client.post("/v1/conversations/c1/runs", json={"message": "one"})
        assert first.status_code == 200
        held = asyncio.ensure_future(
            client.post("/v1/conversations/c1/runs", json={"message": "hold:never"}))
        await asyncio.to_thread(gates.wait_entered, "never")
        began = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(server.process.wait, 30)  # the gate is never released
        waited = time.monotonic() - began
        # uvicorn re-raises the signal once it has shut down: the exit says SIGTERM
        assert code in (0, -signal.SIGTERM) and 0.8 <= waited < 20, (code, waited)  # 80% grace
        with contextlib.suppress(httpx.TransportError):  # gone with the server: cancelled
            await held
    restarted = start_server("e2e_flows:workflow")
    async with httpx.AsyncClient(base_url=restarted.url, timeout=60) as client:
        state = (await client.get("/v1/conversations/c1")).json()
        assert state["status"] == "idle" and state["outputs"] == ["ONE"]  # the last good turn
        assert state["resume_token"] == first.json()["resume_token"]


async def test_a_killed_server_leaves_a_lease_of_lease_seconds_an_operator_can_see_and_clear(
    start_server: Start, gates: Gates, tmp_path: Path, capsys: Any
) -> None:
    storage = f"file:{tmp_path / 'store'}"
    server = start_server("e2e_flows:workflow", storage, "--lease-seconds", "45")
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        assert (await client.post("/v1/conversations/c1/runs",
                                  json={"message": "one"})).status_code == 200
        held = asyncio.ensure_future(
            client.post("/v1/conversations/c1/runs", json={"message": "hold:dies"}))
        await asyncio.to_thread(gates.wait_entered, "dies")
        server.process.kill()
        server.process.wait(30)
        with contextlib.suppress(httpx.TransportError):
            await held

    def conversations(*argv: str) -> Any:
        assert main(["conversations", *argv, "--storage", storage, "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    (listed,) = await asyncio.to_thread(conversations, "ls")
    assert listed["conversation_id"] == "c1"
    left = listed["lease"]["expires_at"] - time.time()
    assert 0 < left <= 45  # --lease-seconds, not the default 300
    assert listed["lease_is_live"] is False  # its owner, a process of this host, is gone
    cleared = await asyncio.to_thread(conversations, "unlock", "c1")
    assert cleared["cleared"]["pid"] == server.process.pid
    shown = await asyncio.to_thread(conversations, "show", "c1")
    assert shown["lease"] is None and shown["status"] == "idle"


async def test_a_given_limit_the_descriptors_cannot_hold_is_lowered_aloud(
    start_server: Start,
) -> None:
    server = start_server("e2e_flows:workflow", None, "--limit-concurrency", "500",
                          preexec_fn=_few_descriptors)
    lowered = [line for line in server.output if "--limit-concurrency lowered" in line]
    assert lowered and f"from 500 to {(DESCRIPTORS - 32) // 4}" in lowered[0]
    assert f"limit is {DESCRIPTORS}" in lowered[0]  # printed before the banner, found anyway
