"""Hosting throughput: conversations/s, latency and server CPU per conversation, side by side.

In one run, on loopback: ``python -m checkflow serve agui_flows:approval`` as shipped on
``memory:`` and on ``file:`` (durable, fsynced), and a bare Starlette endpoint on the same
uvicorn stack (``bench/_bare_server.py``: parse the body, answer one dict; the ceiling for
any ASGI server here). A conversation is a message that pauses for approval plus the answer
(two requests). Each server runs pinned to core 0, this load generator to core 1 (a
keep-alive HTTP/1.1 client on raw asyncio streams, one connection per client, so the client
costs little). Per cell: conversations/s, p50/p95 latency of one request, and the server's CPU
milliseconds per conversation from ``/proc/PID/stat`` (utime + stime over the cell).

``--before DIR`` also serves from another source tree (a ``git worktree`` of the base commit)
and alternates it with this one round by round; the table shows medians over ``--rounds``
rounds, and the load average is printed per round (the machine may be shared).
``--loop`` picks every server's event loop: ``auto`` (the default, as shipped: uvloop, which
the ``hosting`` extra installs, when it imports), ``asyncio`` (the pure-Python stack) or
``uvloop``; the bare server runs on the same loop as ``serve`` (``CHECKFLOW_LOOP``).
``--standard DIR`` adds rows served with uvicorn's ``standard`` stack (httptools too) from a
folder it is installed in (``pip install --target DIR uvloop httptools``): uvicorn picks
httptools up by itself when importable (the bare server; ``serve``'s connection-bounding
protocol is h11's), on uvloop. ``--cosmos`` adds ``cosmos:``
rows against the local emulator (``tests/cosmos_emulator.py``; pinned to the load generator's
core; loopback figures, not a real account).
Bounded: every cell stops after ``--seconds`` or ``--max-conversations``. Asserts nothing;
after the table it prints the issue's targets beside what this run measured.

    .venv/bin/python bench/hosting.py [--seconds 4] [--rounds 3] [--before DIR] [--loop L]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
E2E = ROOT / "tests" / "e2e"
SERVER_CORE, CLIENT_CORE = 0, 1
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Cell:
    conversations: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.conversations / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000

    @property
    def cpu_ms(self) -> float:
        return self.cpu_seconds * 1000 / max(1, self.conversations)


def _cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15)


def _pin_to_server_core() -> None:
    os.sched_setaffinity(0, {SERVER_CORE})


@contextlib.contextmanager
def _server(tree: Path, kind: str, storage: str, extra_path: str, loop: str = "auto"
            ) -> Iterator[tuple[int, int]]:
    """Start one server from source tree ``tree`` on event loop ``loop``; yield (pid, port);
    stop it."""
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(p for p in [str(tree), str(E2E), extra_path] if p),
           "CHECKFLOW_COSMOS_DATABASE": f"bench-{uuid.uuid4().hex}"}
    if kind == "bare":
        argv = [str(ROOT / "bench" / "_bare_server.py")]
    else:
        argv = ["-m", "checkflow", "serve", "agui_flows:approval", "--port", "0",
                "--storage", storage]
    # serve picks its loop itself (--loop, read from CHECKFLOW_LOOP; a tree older than the
    # option ignores it and runs on asyncio's loop); the --standard rows run on uvloop.
    loop = "uvloop" if extra_path else loop
    env["CHECKFLOW_LOOP"] = loop
    if kind == "bare" and _loop_name(loop) == "uvloop":  # as serve's: the bare asyncio.run's
        argv = ["-c", "import asyncio, runpy, sys, uvloop; "
                "asyncio.set_event_loop_policy(uvloop.EventLoopPolicy()); "
                f"sys.argv[1:] = {argv[1:]!r}; "
                f"runpy.run_path({argv[0]!r}, run_name='__main__')"]
    argv = [sys.executable, *argv]
    # The server's output (the access log is on as shipped) goes to a file: the kernel takes
    # it, as a log collector in another process would. Read by a thread of this process, it
    # would compete with the load generator for the GIL and slow the load (measured: about
    # 0.07 ms more server CPU per conversation with the access log on).
    with tempfile.TemporaryDirectory(prefix="checkflow-bench-") as folder:
        log = Path(folder) / "server.log"
        with log.open("w") as out:
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                       cwd=tree, preexec_fn=_pin_to_server_core)
        try:
            yield process.pid, _port_from_banner(process, log)
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _port_from_banner(process: subprocess.Popen[bytes], log: Path) -> int:
    """The port of the ``... on http://HOST:PORT`` line the server prints once it listens."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if " on http://" in line:
                address = line.split(" on http://", 1)[1].split()[0]
                return int(address.rsplit(":", 1)[1].rstrip("/"))
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"server did not start:\n{log.read_text(errors='replace')}")


class Connection:
    """One keep-alive HTTP/1.1 connection that POSTs JSON and reads a sized JSON answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def post(self, path: str, body: dict[str, object]) -> tuple[int, dict[str, object]]:
        data = json.dumps(body).encode()
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next(int(line.split(":", 1)[1]) for line in lines[1:]
                      if line.lower().startswith("content-length:"))
        return status, json.loads(await self.reader.readexactly(length))

    def close(self) -> None:
        self.writer.close()


async def _conversation(http: Connection, cid: str, bare: bool, latencies: list[float]
                        ) -> None:
    path = f"/v1/conversations/{cid}/runs"
    began = time.perf_counter()
    status, paused = await http.post(path, {"message": cid})
    answered = time.perf_counter()
    latencies.append(answered - began)
    if bare:
        answer: dict[str, object] = {"message": "yes"}
    else:
        if status != 200 or paused.get("status") != "awaiting_responses":
            raise SystemExit(f"unexpected answer: {status} {paused}")
        pending = paused["pending_requests"]
        assert isinstance(pending, list)
        answer = {"responses": {pending[0]["request_id"]: True}}
    status, done = await http.post(path, answer)
    latencies.append(time.perf_counter() - answered)
    if status != 200 or (not bare and done.get("outputs") != [f"published: Five things "
                                                                f"about {cid}."]):
        raise SystemExit(f"unexpected answer: {status} {done}")


async def _drive(pid: int, port: int, clients: int, seconds: float, most: int, tag: str,
                 bare: bool) -> Cell:
    """Warm up briefly, then run ``clients`` loops for ``seconds`` (at most ``most`` each)."""
    connections = [await Connection.open(port) for _ in range(clients)]
    cell = Cell()
    try:
        for i, http in enumerate(connections):  # warm-up: every connection once
            await _conversation(http, f"{tag}-warm-{i}", bare, [])
        deadline = time.perf_counter() + seconds

        async def client(index: int, http: Connection) -> None:
            for n in range(most):
                if time.perf_counter() >= deadline:
                    return
                await _conversation(http, f"{tag}-{index}-{n}", bare, cell.latencies)
                cell.conversations += 1

        cpu, began = _cpu_seconds(pid), time.perf_counter()
        await asyncio.gather(*(client(i, h) for i, h in enumerate(connections)))
        cell.seconds = time.perf_counter() - began
        cell.cpu_seconds = _cpu_seconds(pid) - cpu
    finally:
        for http in connections:
            http.close()
    return cell


def _loop_name(choice: str) -> str:
    """The loop ``choice`` gives here, by ``serve --loop``'s rule (auto: uvloop if it imports)."""
    if choice != "auto":
        return choice
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--max-conversations", type=int, default=20_000,
                        help="per client and cell")
    parser.add_argument("--before", type=Path, help="a source tree to compare (old code)")
    parser.add_argument("--cosmos", action="store_true", help="also cosmos: on the emulator")
    parser.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto",
                        help="every server's event loop (default auto: as shipped)")
    parser.add_argument("--standard", type=Path,
                        help="a folder holding uvloop and httptools: adds rows on that stack")
    args = parser.parse_args()
    os.sched_setaffinity(0, {CLIENT_CORE})
    trees = [("now", ROOT)] if args.before is None else [("before", args.before.resolve()),
                                                       ("after", ROOT)]
    results: dict[tuple[str, str, int], list[Cell]] = {}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        servers = [("bare starlette", "bare", "", ""), ("memory:", "serve", "memory:", ""),
                   ("file:", "serve", "file:{tmp}", "")]
        if args.cosmos:
            _start_emulator(stack)
            servers.append(("cosmos:", "serve", "cosmos:", ""))
        if args.standard is not None:
            std = str(args.standard.resolve())
            servers += [("bare std", "bare", "", std), ("memory: std", "serve", "memory:", std),
                        ("file: std", "serve", "file:{tmp}", std)]
        print(f"server on core {SERVER_CORE}, load generator on core {CLIENT_CORE}, loop "
              f"{_loop_name(args.loop)}; "
              f"{args.seconds:g} s per cell, {args.rounds} rounds; a conversation = a message "
              f"that pauses for approval + the answer; latency is per request")
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}: load average {_load()}", flush=True)
            for tree_name, tree in trees:
                for label, kind, storage, extra_path in servers:
                    if (kind == "bare" or extra_path) and tree_name != trees[-1][0]:
                        continue  # the ceiling, and the other stack: this tree only
                    folder = tmp / f"{tree_name}-{round_}-{len(results)}"
                    with _server(tree, kind, storage.format(tmp=folder), extra_path,
                                 args.loop) as (pid, port):
                        for clients in args.clients:
                            tag = f"{tree_name}{round_}c{clients}"
                            cell = asyncio.run(_drive(pid, port, clients, args.seconds,
                                                      args.max_conversations, tag,
                                                      kind == "bare"))
                            results.setdefault((tree_name, label, clients), []).append(cell)
        print(f"done: load average {_load()}")
    _print_table(results, [t for t, _ in trees], [s[0] for s in servers], args.clients)
    _print_targets(results, [t for t, _ in trees])


def _start_emulator(stack: contextlib.ExitStack) -> None:
    """The local Cosmos DB emulator, on the load generator's core; its settings in our env
    (every server inherits them and names a database of its own)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from cosmos_emulator import start_emulator  # type: ignore[import-not-found]

    emulator = start_emulator()
    stack.callback(emulator.stop)
    os.sched_setaffinity(emulator.pid, {CLIENT_CORE})
    os.environ["CHECKFLOW_COSMOS_ENDPOINT"] = emulator.endpoint
    os.environ["CHECKFLOW_COSMOS_KEY"] = emulator.key


def _print_table(results: dict[tuple[str, str, int], list[Cell]], trees: list[str],
                 servers: list[str], clients: list[int]) -> None:
    cols = " | ".join(f"{c} cl: conv/s  p50  p95 ms  CPU ms/conv" for c in clients)
    print(f"\n{'code':7} {'server':15} | {cols}")
    for server in servers:
        for tree in trees:
            if (tree, server, clients[0]) not in results:
                continue
            parts = []
            for c in clients:
                cells = results[(tree, server, c)]
                parts.append(
                    f"{statistics.median(x.rate for x in cells):13.0f} "
                    f"{statistics.median(x.percentile(0.5) for x in cells):5.1f} "
                    f"{statistics.median(x.percentile(0.95) for x in cells):5.1f} "
                    f"{statistics.median(x.cpu_ms for x in cells):14.2f}")
            print(f"{tree:7} {server:15} | " + " | ".join(parts))


def _print_targets(results: dict[tuple[str, str, int], list[Cell]], trees: list[str]) -> None:
    """The issue's four targets beside this run's medians (own CPU: checkflow's ``memory:``
    CPU per conversation minus the bare endpoint's, at 32 clients, in the same run)."""

    def median(tree: str, server: str, clients: int, value: str) -> float | None:
        cells = results.get((tree, server, clients))
        if not cells:
            return None
        return statistics.median(
            x.rate if value == "rate" else x.percentile(0.5) if value == "p50" else x.cpu_ms
            for x in cells)

    def own(tree: str, clients: int) -> float | None:
        memory, bare = (median(tree, "memory:", clients, "cpu"),
                        median(trees[-1], "bare starlette", clients, "cpu"))
        return None if memory is None or bare is None else memory - bare

    print("\ntargets (medians of this run; the CPU target is read at 32 clients, as the "
          "memory: rate's)")
    for tree in trees:
        rows = [("file: conv/s at 32 clients", median(tree, "file:", 32, "rate"), ">=", 300),
                ("file: p50 ms at 8 clients", median(tree, "file:", 8, "p50"), "<=", 15),
                ("memory: conv/s at 32 clients", median(tree, "memory:", 32, "rate"), ">=", 900),
                ("own CPU ms/conv at 32 clients", own(tree, 32), "<=", 0.6)]
        for name, value, op, goal in rows:
            if value is None:
                continue  # that cell was not measured (other --clients)
            met = value >= goal if op == ">=" else value <= goal
            print(f"{tree:7} {name:31} {value:8.2f}  target {op} {goal:<5} "
                  f"{'met' if met else 'NOT met'}")
        at_8 = own(tree, 8)
        if at_8 is not None:
            print(f"{tree:7} {'own CPU ms/conv at 8 clients':31} {at_8:8.2f}  (for reference)")


if __name__ == "__main__":
    main()
