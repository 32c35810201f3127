"""Hosting throughput: conversations/s, latency and server CPU per conversation, side by side.

In one run, on loopback: ``python -m checkflow serve agui_flows:approval`` as shipped on
``memory:`` and on ``file:`` (durable, fsynced), and a bare Starlette endpoint on the same
uvicorn stack (``bench/_bare_server.py``: parse the body, answer one dict; the ceiling for
any ASGI server here). A conversation is a message that pauses for approval plus the answer
(two requests), spoken over each protocol (``--protocols``; ``bench/_conversations.py``): the
native API, AG-UI (the SSE read to ``RUN_FINISHED``, then a ``resume``), A2A (JSON-RPC
``SendMessage``, then the ``INPUT_REQUIRED`` task's continuation) and Responses (``POST
/responses``, then the reply with ``previous_response_id``), each against its own fresh
``serve --adapters agui,a2a,foundry`` (the native rows too, so every ratio compares one server
build). Each server runs pinned to core 0, this load generator to core 1 (a
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
A conversation answered wrongly is not counted; each cell's failures are printed at the end
(``FAILED``, with the first answer). Bounded: every cell stops after ``--seconds`` or
``--max-conversations``. Asserts nothing;
after the table it prints the issues' targets beside what this run measured: the hosting
targets, and each protocol's CPU per conversation beside the native one with the ratio
(target: within 1.25x).

    .venv/bin/python bench/hosting.py [--seconds 4] [--rounds 3] [--before DIR] [--loop L]
        [--protocols native agui a2a responses] [--clients 8 32]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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

from _conversations import (
    ADAPTERS,
    CONVERSATIONS,
    PROTOCOLS,
    Conversation,
    ConversationError,
)
from _wire import Connection

ROOT = Path(__file__).resolve().parent.parent
E2E = ROOT / "tests" / "e2e"
SERVER_CORE, CLIENT_CORE = 0, 1
TICKS = os.sysconf("SC_CLK_TCK")
PROTOCOL_TARGET = 1.25
"""Issue 27: each protocol's server CPU per conversation within this factor of native's."""


@dataclass
class Cell:
    conversations: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0
    failed: list[str] = field(default_factory=list)  # conversations answered wrongly

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
def _server(tree: Path, kind: str, storage: str, extra_path: str, loop: str = "auto",
            adapters: str = "") -> Iterator[tuple[int, int]]:
    """Start one server from source tree ``tree`` on event loop ``loop`` (``serve`` with
    ``--adapters adapters`` if any); yield (pid, port); stop it."""
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(p for p in [str(tree), str(E2E), extra_path] if p),
           "CHECKFLOW_COSMOS_DATABASE": f"bench-{uuid.uuid4().hex}"}
    if kind == "bare":
        argv = [str(ROOT / "bench" / "_bare_server.py")]
    else:
        argv = ["-m", "checkflow", "serve", "agui_flows:approval", "--port", "0",
                "--storage", storage, *(["--adapters", adapters] if adapters else [])]
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


async def _drive(pid: int, port: int, clients: int, seconds: float, most: int, tag: str,
                 conversation: Conversation) -> Cell:
    """Warm up briefly, then run ``clients`` loops for ``seconds`` (at most ``most`` each)."""
    connections = [await Connection.open(port) for _ in range(clients)]
    cell = Cell()
    try:
        for i, http in enumerate(connections):  # warm-up: every connection once
            await conversation(http, f"{tag}-warm-{i}", [])
        deadline = time.perf_counter() + seconds

        async def client(index: int, http: Connection) -> None:
            for n in range(most):
                if time.perf_counter() >= deadline:
                    return
                try:
                    await conversation(http, f"{tag}-{index}-{n}", cell.latencies)
                except ConversationError as exc:  # counted and shown, not measured
                    cell.failed.append(str(exc))
                    continue
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
    parser.add_argument("--protocols", nargs="+", choices=PROTOCOLS, default=list(PROTOCOLS),
                        help="what the memory: and file: rows speak (default all; with any "
                             f"but native, those servers run --adapters {ADAPTERS})")
    args = parser.parse_args()
    os.sched_setaffinity(0, {CLIENT_CORE})
    trees = [("now", ROOT)] if args.before is None else [("before", args.before.resolve()),
                                                       ("after", ROOT)]
    results: dict[tuple[str, str, int], list[Cell]] = {}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        adapters = "" if args.protocols == ["native"] else ADAPTERS
        servers = [Row("bare starlette", "bare", "", protocol="bare")]
        servers += [Row(f"{name} {protocol}", "serve", storage, protocol=protocol,
                        adapters=adapters)
                    for name, storage in (("memory:", "memory:"), ("file:", "file:{tmp}"))
                    for protocol in args.protocols]
        if args.cosmos:
            _start_emulator(stack)
            servers.append(Row("cosmos: native", "serve", "cosmos:"))
        if args.standard is not None:
            std = str(args.standard.resolve())
            servers += [Row("bare std", "bare", "", std, "bare"),
                        Row("memory: std", "serve", "memory:", std),
                        Row("file: std", "serve", "file:{tmp}", std)]
        print(f"server on core {SERVER_CORE}, load generator on core {CLIENT_CORE}, loop "
              f"{_loop_name(args.loop)}; "
              f"{args.seconds:g} s per cell, {args.rounds} rounds; a conversation = a message "
              f"that pauses for approval + the answer; latency is per request; "
              f"adapters: {adapters or 'none'}")
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}: load average {_load()}", flush=True)
            for tree_name, tree in trees:
                for row in servers:
                    if (row.kind == "bare" or row.extra_path) and tree_name != trees[-1][0]:
                        continue  # the ceiling, and the other stack: this tree only
                    folder = tmp / f"{tree_name}-{round_}-{len(results)}"
                    with _server(tree, row.kind, row.storage.format(tmp=folder),
                                 row.extra_path, args.loop, row.adapters) as (pid, port):
                        for clients in args.clients:
                            tag = f"{tree_name}{round_}c{clients}"
                            cell = asyncio.run(_drive(pid, port, clients, args.seconds,
                                                      args.max_conversations, tag,
                                                      CONVERSATIONS[row.protocol]))
                            results.setdefault((tree_name, row.label, clients),
                                               []).append(cell)
        print(f"done: load average {_load()}")
    tree_names = [t for t, _ in trees]
    _print_table(results, tree_names, [s.label for s in servers], args.clients)
    _print_targets(results, tree_names)
    _print_protocols(results, tree_names, args.protocols, args.clients)
    _print_failures(results)


@dataclass(frozen=True)
class Row:
    """One server of the table: what it is, what it stores in, what its clients speak."""

    label: str
    kind: str  # "bare" or "serve"
    storage: str
    extra_path: str = ""
    protocol: str = "native"
    adapters: str = ""


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
    print(f"\n{'code':7} {'server':17} | {cols}")
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
            print(f"{tree:7} {server:17} | " + " | ".join(parts))


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
        memory, bare = (median(tree, "memory: native", clients, "cpu"),
                        median(trees[-1], "bare starlette", clients, "cpu"))
        return None if memory is None or bare is None else memory - bare

    print("\ntargets (medians of this run; the CPU target is read at 32 clients, as the "
          "memory: rate's)")
    for tree in trees:
        rows = [("file: conv/s at 32 clients", median(tree, "file: native", 32, "rate"), ">=",
                 300),
                ("file: p50 ms at 8 clients", median(tree, "file: native", 8, "p50"), "<=", 15),
                ("memory: conv/s at 32 clients", median(tree, "memory: native", 32, "rate"),
                 ">=", 900),
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


def _print_protocols(results: dict[tuple[str, str, int], list[Cell]], trees: list[str],
                     protocols: list[str], clients: list[int]) -> None:
    """Each protocol's CPU per conversation beside the native API's on the same storage, in
    the same run, with the ratio (issue 27's target: each within 1.25x of native)."""
    others = [p for p in protocols if p != "native"]
    if "native" not in protocols or not others:
        return
    print("\nprotocols: server CPU ms/conv (medians), and x native on the same storage; "
          f"target: each within {PROTOCOL_TARGET}x of native on memory: and file:")
    print(f"{'code':7} {'storage':8} {'clients':>7} {'native':>7} | " + " | ".join(
        f"{p:>20}" for p in others))
    for tree in trees:
        for storage in ("memory:", "file:"):
            for c in clients:
                native = statistics.median(
                    x.cpu_ms for x in results[(tree, f"{storage} native", c)])
                cells = []
                for p in others:
                    cpu = statistics.median(x.cpu_ms for x in results[(tree, f"{storage} {p}",
                                                                        c)])
                    ratio = cpu / native
                    met = "met" if ratio <= PROTOCOL_TARGET else "NOT met"
                    cells.append(f"{cpu:6.2f} {ratio:5.2f}x {met:>7}")
                print(f"{tree:7} {storage:8} {c:7} {native:7.2f} | " + " | ".join(cells))


def _print_failures(results: dict[tuple[str, str, int], list[Cell]]) -> None:
    """Every cell whose server answered a conversation wrongly: how often, and the first
    answer (a wrong answer is a finding, so the run goes on and says so)."""
    for (tree, server, clients), cells in results.items():
        failed = [f for cell in cells for f in cell.failed]
        if failed:
            print(f"\nFAILED {tree} {server} at {clients} clients: {len(failed)} "
                  f"conversation(s); the first: {failed[0]}")


if __name__ == "__main__":
    main()
