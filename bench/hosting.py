"""Hosting throughput: N concurrent clients drive the native API of a real server for a while.

Starts ``python -m checkflow serve e2e_flows:workflow`` (the end-to-end tests' workflow,
``tests/e2e/e2e_flows.py``) on loopback for each storage, then runs N client tasks for a fixed
time. Each request runs a 3-superstep workflow (start -> shout -> finish, 4 snapshots). Two request
mixes: a new conversation per request, and one conversation per client that keeps growing.
Prints requests/s and p50/p95 latency, and first the host's own overhead in process (host.run
against a bare workflow.run); asserts nothing.

    .venv/bin/python bench/hosting.py [--clients 16] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

E2E = Path(__file__).resolve().parent.parent / "tests" / "e2e"
sys.path.insert(0, str(E2E))

from e2e_flows import workflow  # noqa: E402  (the end-to-end tests' 3-superstep workflow)


def _start_server(storage: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(E2E), str(E2E.parents[1])])}
    process = subprocess.Popen(
        [sys.executable, "-m", "checkflow", "serve", "e2e_flows:workflow", "--port", "0",
         "--storage", storage],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    assert process.stdout is not None
    banner = process.stdout.readline()
    if " on http://" not in banner:
        process.kill()
        raise SystemExit(f"server did not start: {banner}{process.stdout.read()}")
    return process, banner.split(" on ", 1)[1].split()[0]


async def _drive(url: str, clients: int, seconds: float, growing: bool) -> list[float]:
    import httpx

    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def client(index: int, http: httpx.AsyncClient) -> None:
        n = 0
        while time.perf_counter() < deadline:
            conversation = f"client-{index}" if growing else f"client-{index}-{n}"
            began = time.perf_counter()
            response = await http.post(f"{url}/v1/conversations/{conversation}/runs",
                                       json={"message": f"m{n}"})
            latencies.append(time.perf_counter() - began)
            if response.status_code != 200 or response.json()["outputs"] != [f"M{n}"]:
                raise SystemExit(f"unexpected answer: {response.status_code} {response.text}")
            n += 1

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        await asyncio.gather(*(client(i, http) for i in range(clients)))
    return latencies


def _row(storage: str, mix: str, latencies: list[float], seconds: float) -> str:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p95 = ordered[int(len(ordered) * 0.95) - 1] * 1000
    return (f"{storage:8} {mix:22} {len(ordered) / seconds:10.0f} {p50:9.1f} {p95:9.1f}")


async def _in_process(runs: int) -> tuple[float, float]:
    """Microseconds per run: ``host.run`` (session, lease, reference) vs bare ``workflow.run``."""
    from checkflow.hosting import WorkflowHost
    from checkflow.storage import InMemoryCheckpointStorage

    host = WorkflowHost(workflow)
    began = time.perf_counter()
    for i in range(runs):
        await host.run(f"c-{i}", message="x")
    hosted = (time.perf_counter() - began) / runs
    storage = InMemoryCheckpointStorage()
    began = time.perf_counter()
    for i in range(runs):
        checkpoint = workflow.create_checkpoint(checkpoint_id=f"c-{i}", checkpoint_storage=storage)
        await workflow.run("x", checkpoint=checkpoint)
    bare = (time.perf_counter() - began) / runs
    return hosted * 1e6, bare * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    hosted, bare = asyncio.run(_in_process(2000))
    print(f"in process, memory storage: host.run {hosted:.0f} us vs workflow.run {bare:.0f} us "
          f"per 3-superstep run ({hosted / bare:.2f}x: session get, lease write, release write)")
    print(f"{args.clients} concurrent clients, {args.seconds:.0f} s per cell, "
          f"3-superstep workflow, {os.cpu_count()} CPUs shared by server and clients")
    print(f"{'storage':8} {'requests':22} {'req/s':>10} {'p50 ms':>9} {'p95 ms':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, storage in [("memory", "memory:"), ("file", f"file:{tmp}/store")]:
            process, url = _start_server(storage)
            try:
                for mix, growing in [("new conversation each", False),
                                     ("one conversation each", True)]:
                    latencies = asyncio.run(_drive(url, args.clients, args.seconds, growing))
                    print(_row(name, mix, latencies, args.seconds), flush=True)
            finally:
                process.terminate()
                process.wait()


if __name__ == "__main__":
    main()
