"""The peer half of the engine benchmark: the same workloads on agent-framework and LangGraph.

`bench/engine.py` times checkflow; this module times the two peers on identical workloads, in
one process, through their own async APIs, and hands back plain dicts (see
`run_peer_workloads`). The peers are installed only in `.venv-bench` (pinned in
`bench/requirements-peers.txt`); a peer that fails to import is skipped with a message.

Workloads (one superstep = one executor / node invocation; a run of `steps` supersteps is a
start step followed by a worker that sends `n - 1` to itself until 0):

- W1: 1,000 supersteps, µs per superstep, with no checkpointing, in-memory checkpoints, and
  durable checkpoints (agent-framework `FileCheckpointStorage`; LangGraph `AsyncSqliteSaver`).
- W2: 200 supersteps carrying `make_shared_state()` (~100 KB, written once by the start step
  and unchanged after), durable: µs per superstep and stored bytes per snapshot.
- W2 "touch": the same 200 supersteps, but the worker rewrites the ~100 KB payload every
  superstep (`touched()`: a new list with one item changed), with no checkpointing, in-memory
  and durable checkpoints: µs per superstep.
- W3: 100 concurrent 10-step runs with in-memory checkpoints, ms in total.
- W4: a durable run with the W2 state stops after 100 supersteps with work pending; ms to load
  the latest checkpoint from file and resume to the completion of one more superstep.

This module must never import checkflow nor time it, never assert on speed, and never leave
files behind: every run writes into a temporary directory removed afterwards.
"""

import argparse
import asyncio
import json
import logging
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict

Mode = Literal["none", "memory", "durable"]
Figures = dict[str, float | None]

MODES: tuple[Mode, ...] = ("none", "memory", "durable")
#: The figure keys every peer reports, in table order (extra, peer-specific keys may follow).
KEYS: tuple[str, ...] = (
    "W1_none_us",
    "W1_memory_us",
    "W1_durable_us",
    "W2_durable_us",
    "W2_bytes_per_snapshot",
    "W2_touch_none_us",
    "W2_touch_memory_us",
    "W2_touch_durable_us",
    "W3_ms",
    "W4_ms",
)


@dataclass(frozen=True)
class Sizes:
    """Loop sizes of one benchmark pass (`quick` divides the loops by ten)."""

    w1_steps: int = 1000
    w2_steps: int = 200
    w3_runs: int = 100
    w3_steps: int = 10
    w4_steps: int = 100
    repeats: int = 3
    timeout_s: float = 180.0

    @classmethod
    def for_pass(cls, *, quick: bool) -> "Sizes":
        if not quick:
            return cls()
        return cls(w1_steps=100, w2_steps=20, w3_runs=10, w3_steps=10, w4_steps=10, repeats=1,
                   timeout_s=60.0)


_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def make_shared_state(items: int = 1000) -> list[dict[str, Any]]:
    """The W2/W4 shared state: `items` small dicts of ints, strings, floats, bools, datetimes.

    About 108 KB as compact JSON for 1,000 items; engine.py should carry the same value on
    checkflow so the stored-bytes figures compare like with like.
    """
    return [
        {
            "id": i,
            "name": f"item-{i}",
            "created": _EPOCH + timedelta(seconds=37 * i),
            "score": round(i / 7, 2),
            "active": i % 3 == 0,
            "tag": ("red", "blue")[i % 2],
        }
        for i in range(items)
    ]


def touched(state: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """W2 "touch": the payload one superstep later, a new list with item ``n`` changed."""
    i = n % len(state)
    return [*state[:i], {**state[i], "score": float(n)}, *state[i + 1:]]


@dataclass(frozen=True)
class LoopRun:
    """What one timed loop produced: elapsed seconds, snapshots stored and their bytes."""

    seconds: float
    snapshots: int
    stored_bytes: int


class Peer(Protocol):
    """One peer framework driven through its own public async API."""

    name: str

    async def loop(self, mode: Mode, steps: int, state: list[dict[str, Any]] | None,
                   workdir: Path, touch: bool = False) -> LoopRun:
        """Run `steps` supersteps (carrying `state` if given, rewritten each superstep if
        `touch`); time only the run itself."""
        ...

    async def concurrent(self, runs: int, steps: int) -> Figures:
        """`W3_ms` for `runs` concurrent `steps`-superstep runs with in-memory checkpoints."""
        ...

    async def stop_after(self, steps: int, state: list[dict[str, Any]], workdir: Path) -> None:
        """Leave a durable run in `workdir` stopped after `steps` supersteps, one step pending."""
        ...

    async def resume(self, workdir: Path) -> Figures:
        """Time loading the latest checkpoint in `workdir` and finishing the pending step."""
        ...


def _worker_message(steps: int) -> int:
    """The start message that makes a run last exactly `steps` supersteps (1 start + n+1)."""
    if steps < 2:
        raise ValueError(f"a run needs at least 2 supersteps, got {steps}")
    return steps - 2


# --------------------------------------------------------------------------- agent-framework


_LATEST_ID_FILE = "latest-checkpoint-id"


class _AgentFrameworkPeer:
    """agent-framework-core: executors + `WorkflowBuilder`, checkpoint storage on the builder."""

    name = "agent-framework"
    _workflow_name = "peers-bench"

    def __init__(self) -> None:
        import agent_framework as af

        self._af = af
        # The builder warns about the (intended) self-loop on every build.
        logging.getLogger("agent_framework").setLevel(logging.ERROR)
        self._executors = self._define_executors()

    def _define_executors(self) -> tuple[type[Any], type[Any]]:
        af = self._af

        class Start(af.Executor):  # type: ignore[misc,name-defined]
            def __init__(self, state: list[dict[str, Any]] | None) -> None:
                super().__init__(id="start")
                self._state = state

            @af.handler
            async def start(self, n: int, ctx: af.WorkflowContext[int]) -> None:
                if self._state is not None:
                    ctx.set_state("payload", self._state)
                await ctx.send_message(n)

        class Worker(af.Executor):  # type: ignore[misc,name-defined]
            def __init__(self, id: str, touch: list[dict[str, Any]] | None = None) -> None:
                super().__init__(id=id)
                self._touch = touch

            @af.handler
            async def step(self, n: int, ctx: af.WorkflowContext[int, int]) -> None:
                if self._touch is not None:
                    ctx.set_state("payload", touched(self._touch, n))
                if n > 0:
                    await ctx.send_message(n - 1)
                else:
                    await ctx.yield_output(n)

        return Start, Worker

    def _build(self, storage: Any, state: list[dict[str, Any]] | None,
               max_iterations: int, touch: bool = False) -> Any:
        start_cls, worker_cls = self._executors
        start, worker = start_cls(state), worker_cls(id="worker", touch=state if touch else None)
        builder = self._af.WorkflowBuilder(
            start_executor=start, name=self._workflow_name, max_iterations=max_iterations,
            checkpoint_storage=storage,
        )
        return builder.add_edge(start, worker).add_edge(worker, worker).build()

    def _storage(self, mode: Mode, workdir: Path) -> Any:
        if mode == "none":
            return None
        if mode == "memory":
            return self._af.InMemoryCheckpointStorage()
        return self._af.FileCheckpointStorage(workdir)

    async def loop(self, mode: Mode, steps: int, state: list[dict[str, Any]] | None,
                   workdir: Path, touch: bool = False) -> LoopRun:
        workflow = self._build(self._storage(mode, workdir), state, steps + 1, touch)
        began = time.perf_counter()
        result = await workflow.run(_worker_message(steps))
        seconds = time.perf_counter() - began
        _expect(result.get_outputs() == [0], f"{self.name} loop yielded {result.get_outputs()}")
        files = list(workdir.glob("*.json"))
        return LoopRun(seconds, len(files), sum(f.stat().st_size for f in files))

    async def concurrent(self, runs: int, steps: int) -> Figures:
        # One Workflow instance cannot run twice at once, so every run needs its own build;
        # the builds are timed too (a server pays them per conversation), and shown apart.
        began = time.perf_counter()
        storage = self._af.InMemoryCheckpointStorage()
        workflows = [self._build(storage, None, steps + 1) for _ in range(runs)]
        built = time.perf_counter()
        results = await asyncio.gather(*(w.run(_worker_message(steps)) for w in workflows))
        ended = time.perf_counter()
        _expect(all(r.get_outputs() == [0] for r in results), f"{self.name}: a run failed")
        return {"W3_ms": (ended - began) * 1e3, "W3_build_ms": (built - began) * 1e3}

    async def stop_after(self, steps: int, state: list[dict[str, Any]], workdir: Path) -> None:
        # max_iterations stops the run after `steps` supersteps, the last one checkpointed
        # with the worker's next message still pending (a crash between supersteps).
        # The application keeps the last checkpoint id (what `resume` calls "known").
        workflow = self._build(self._af.FileCheckpointStorage(workdir), state, steps)
        try:
            await workflow.run(_worker_message(steps + 1))
        except self._af.WorkflowConvergenceException:
            (workdir / _LATEST_ID_FILE).write_text(workflow.get_last_checkpoint_id())
            return
        raise AssertionError(f"{self.name}: the run finished instead of stopping")

    async def resume(self, workdir: Path) -> Figures:
        # W4_ms: the application kept the latest checkpoint id (the peer's best case).
        # W4_scan_ms: it asks storage for the latest one (`get_latest` decodes every file).
        # Scan first: each resume commits new checkpoints, which `get_latest` would then pick.
        storage = self._af.FileCheckpointStorage(workdir)
        latest = (workdir / _LATEST_ID_FILE).read_text()
        scanned = await self._timed_resume(storage, lambda: self._latest_id(storage))
        known = await self._timed_resume(storage, lambda: _ready(latest))
        return {"W4_ms": known * 1e3, "W4_scan_ms": scanned * 1e3}

    async def _latest_id(self, storage: Any) -> str:
        checkpoint = await storage.get_latest(workflow_name=self._workflow_name)
        _expect(checkpoint is not None, f"{self.name}: no checkpoint to resume")
        return str(checkpoint.checkpoint_id)

    async def _timed_resume(self, storage: Any, latest_id: Callable[[], Awaitable[str]]) -> float:
        workflow = self._build(storage, None, 1_000_000)
        began = time.perf_counter()
        result = await workflow.run(checkpoint_id=await latest_id(), checkpoint_storage=storage)
        seconds = time.perf_counter() - began
        supersteps = sum(1 for event in result if event.type == "superstep_completed")
        _expect(result.get_outputs() == [0] and supersteps == 1,
                f"{self.name} resume ran {supersteps} supersteps to {result.get_outputs()}")
        return seconds


# --------------------------------------------------------------------------------- LangGraph


class _LoopState(TypedDict, total=False):
    n: int
    payload: list[dict[str, Any]]


class _LangGraphPeer:
    """LangGraph: a `StateGraph` with a conditional self-loop, driven by `ainvoke`."""

    name = "langgraph"

    def __init__(self, durability: Literal["async", "sync"] = "async") -> None:
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
        from langgraph.errors import GraphRecursionError

        self._memory_saver = InMemorySaver
        self._sqlite_saver = AsyncSqliteSaver
        self._recursion_error = GraphRecursionError
        # "async" is LangGraph's default: every checkpoint is written, overlapping the next
        # step; "sync" waits for each write before the next step (checkflow's guarantee).
        self.durability = durability

    def _compile(self, saver: Any, state: list[dict[str, Any]] | None,
                 touch: bool = False) -> Any:
        from langgraph.graph import END, START, StateGraph

        async def start(s: _LoopState) -> _LoopState:
            return {"n": s["n"]} if state is None else {"n": s["n"], "payload": state}

        async def worker(s: _LoopState) -> _LoopState:
            if touch and state is not None:
                return {"n": s["n"] - 1, "payload": touched(state, s["n"])}
            return {"n": s["n"] - 1}

        def route(s: _LoopState) -> str:
            return "worker" if s["n"] >= 0 else END

        graph = StateGraph(_LoopState)
        graph.add_node("start", start)
        graph.add_node("worker", worker)
        graph.add_edge(START, "start")
        graph.add_edge("start", "worker")
        graph.add_conditional_edges("worker", route, ["worker", END])
        return graph.compile(checkpointer=saver)

    def _config(self, thread: str, limit: int) -> dict[str, Any]:
        return {"recursion_limit": limit, "configurable": {"thread_id": thread}}

    async def _invoke(self, graph: Any, message: int | None, config: dict[str, Any]) -> Any:
        # LangGraph rejects `durability` when the graph has no checkpointer.
        extra = {} if graph.checkpointer is None else {"durability": self.durability}
        payload = None if message is None else {"n": message}
        return await graph.ainvoke(payload, config, **extra)

    async def loop(self, mode: Mode, steps: int, state: list[dict[str, Any]] | None,
                   workdir: Path, touch: bool = False) -> LoopRun:
        config = self._config("loop", steps + 1)
        if mode != "durable":
            saver = self._memory_saver() if mode == "memory" else None
            seconds = await self._timed_loop(self._compile(saver, state, touch), steps, config)
            return LoopRun(seconds, 0, 0)
        database = workdir / "checkpoints.sqlite"
        async with self._sqlite_saver.from_conn_string(str(database)) as saver:
            await saver.setup()
            seconds = await self._timed_loop(self._compile(saver, state, touch), steps, config)
        return LoopRun(seconds, *_sqlite_usage(database))

    async def _timed_loop(self, graph: Any, steps: int, config: dict[str, Any]) -> float:
        began = time.perf_counter()
        final = await self._invoke(graph, _worker_message(steps), config)
        seconds = time.perf_counter() - began
        _expect(final["n"] == -1, f"{self.name} loop ended with {final}")
        return seconds

    async def concurrent(self, runs: int, steps: int) -> Figures:
        graph = self._compile(self._memory_saver(), None)
        began = time.perf_counter()
        finals = await asyncio.gather(*(
            self._invoke(graph, _worker_message(steps), self._config(f"t{i}", steps + 1))
            for i in range(runs)
        ))
        seconds = time.perf_counter() - began
        _expect(all(f["n"] == -1 for f in finals), f"{self.name}: a run failed")
        return {"W3_ms": seconds * 1e3}

    async def stop_after(self, steps: int, state: list[dict[str, Any]], workdir: Path) -> None:
        # recursion_limit stops the run after `steps` supersteps with the next one pending.
        async with self._sqlite_saver.from_conn_string(str(workdir / "w4.sqlite")) as saver:
            graph = self._compile(saver, state)
            try:
                await self._invoke(graph, _worker_message(steps + 1), self._config("w4", steps))
            except self._recursion_error:
                return
        raise AssertionError(f"{self.name}: the run finished instead of stopping")

    async def resume(self, workdir: Path) -> Figures:
        # A fresh connection and graph (the definition and the open storage handle are not
        # timed); ainvoke(None) loads the thread's latest checkpoint and runs what is pending.
        async with self._sqlite_saver.from_conn_string(str(workdir / "w4.sqlite")) as saver:
            await saver.setup()
            graph = self._compile(saver, None)
            config = self._config("w4", 1_000_000)
            began = time.perf_counter()
            final = await self._invoke(graph, None, config)
            seconds = time.perf_counter() - began
            supersteps = await self._supersteps(graph, config)
        _expect(final["n"] == -1 and supersteps == 1,
                f"{self.name} resume ran supersteps {supersteps} to {final}")
        return {"W4_ms": seconds * 1e3}

    async def _supersteps(self, graph: Any, config: dict[str, Any]) -> int:
        """Steps between the thread's two latest checkpoints (what the resume ran)."""
        latest, previous = [c.metadata["step"]
                            async for c in graph.aget_state_history(config, limit=2)]
        return int(latest - previous)


def _sqlite_usage(database: Path) -> tuple[int, int]:
    """Checkpoint rows, and the bytes of every stored blob (checkpoints, metadata, writes)."""
    with sqlite3.connect(database) as conn:
        count, checkpoint_bytes = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0)"
            " FROM checkpoints"
        ).fetchone()
        (write_bytes,) = conn.execute(
            "SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes"
        ).fetchone()
    return int(count), int(checkpoint_bytes + write_bytes)


# ------------------------------------------------------------------------------------ driver


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


async def _ready(value: str) -> str:
    return value


async def _repeat(label: str, sizes: Sizes,
                  once: Callable[[Path], Awaitable[Figures]]) -> Figures:
    """Median of each figure over `sizes.repeats` bounded runs, each in a fresh directory."""
    samples: list[Figures] = []
    for _ in range(sizes.repeats):
        with tempfile.TemporaryDirectory(prefix="peers-bench-") as tmp:
            try:
                samples.append(await asyncio.wait_for(once(Path(tmp)), sizes.timeout_s))
            except TimeoutError:
                print(f"  {label}: gave up after {sizes.timeout_s:.0f} s", file=sys.stderr)
                return {}
            except Exception as exc:
                print(f"  {label}: cannot run ({type(exc).__name__}: {exc})", file=sys.stderr)
                return {}
    return {key: _median([s[key] for s in samples]) for key in samples[0]}


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


async def _loop_figures(peer: Peer, mode: Mode, steps: int,
                        state: list[dict[str, Any]] | None, sizes: Sizes,
                        touch: bool = False) -> Figures:
    async def once(workdir: Path) -> Figures:
        run = await peer.loop(mode, steps, state, workdir, touch)
        per_snapshot = run.stored_bytes / run.snapshots if run.snapshots else None
        return {"us": run.seconds / steps * 1e6, "bytes_per_snapshot": per_snapshot}

    return await _repeat(f"{peer.name} {mode} loop of {steps}", sizes, once)


async def _peer_figures(peer: Peer, sizes: Sizes, state: list[dict[str, Any]]) -> Figures:
    """Every figure of one peer, keyed as in `KEYS` (missing → None)."""
    figures: Figures = dict.fromkeys(KEYS)
    await _loop_figures(peer, "none", 3, None, Sizes(repeats=1))  # warm imports and caches
    for mode in MODES:
        w1 = await _loop_figures(peer, mode, sizes.w1_steps, None, sizes)
        figures[f"W1_{mode}_us"] = w1.get("us")
    w2 = await _loop_figures(peer, "durable", sizes.w2_steps, state, sizes)
    figures["W2_durable_us"] = w2.get("us")
    figures["W2_bytes_per_snapshot"] = w2.get("bytes_per_snapshot")
    for mode in MODES:
        touch = await _loop_figures(peer, mode, sizes.w2_steps, state, sizes, touch=True)
        figures[f"W2_touch_{mode}_us"] = touch.get("us")

    async def w3(_: Path) -> Figures:
        return await peer.concurrent(sizes.w3_runs, sizes.w3_steps)

    async def w4(workdir: Path) -> Figures:
        await peer.stop_after(sizes.w4_steps, state, workdir)
        return await peer.resume(workdir)

    figures.update(await _repeat(f"{peer.name} W3", sizes, w3))
    figures.update(await _repeat(f"{peer.name} W4", sizes, w4))
    return figures


async def _langgraph_sync_figures(sizes: Sizes, state: list[dict[str, Any]]) -> Figures:
    """LangGraph's durable cells again with durability="sync" (write before the next step)."""
    peer = _LangGraphPeer(durability="sync")
    w1 = await _loop_figures(peer, "durable", sizes.w1_steps, None, sizes)
    w2 = await _loop_figures(peer, "durable", sizes.w2_steps, state, sizes)
    touch = await _loop_figures(peer, "durable", sizes.w2_steps, state, sizes, touch=True)
    return {"W1_durable_sync_us": w1.get("us"), "W2_durable_sync_us": w2.get("us"),
            "W2_touch_durable_sync_us": touch.get("us")}


def _load_peers() -> list[Peer]:
    peers: list[Peer] = []
    for factory in (_AgentFrameworkPeer, _LangGraphPeer):
        try:
            peers.append(factory())
        except ImportError as exc:
            print(f"skipping {factory.name}: {exc} (install bench/requirements-peers.txt)",
                  file=sys.stderr)
    return peers


def run_peer_workloads(*, quick: bool = False) -> dict[str, dict[str, float | None]]:
    """Run W1 to W4 on every importable peer: peer name → figure key → value (None: not measured).

    Keys are `KEYS` (µs per superstep for W1/W2, bytes for W2_bytes_per_snapshot, ms for W3/W4)
    plus peer-specific extras: agent-framework `W3_build_ms` and `W4_scan_ms`; LangGraph
    `W1_durable_sync_us` and `W2_durable_sync_us`. Starts its own event loop (inside one, await
    `measure_peer_workloads`); `quick` divides every loop by ten and measures once.
    """
    return asyncio.run(measure_peer_workloads(quick=quick))


async def measure_peer_workloads(*, quick: bool = False) -> dict[str, dict[str, float | None]]:
    """`run_peer_workloads` for a caller already inside an event loop."""
    sizes = Sizes.for_pass(quick=quick)
    state = make_shared_state()
    results: dict[str, dict[str, float | None]] = {}
    for peer in _load_peers():
        print(f"measuring {peer.name} ...", file=sys.stderr)
        figures = await _peer_figures(peer, sizes, state)
        if isinstance(peer, _LangGraphPeer):
            figures.update(await _langgraph_sync_figures(sizes, state))
        for key in (k for k, v in figures.items() if v is None):
            print(f"  {peer.name} {key}: not measured", file=sys.stderr)
        results[peer.name] = figures
    return results


def run_peer_workloads_in(python: str | Path, *, quick: bool = False,
                          timeout_s: float = 900.0) -> dict[str, dict[str, float | None]]:
    """`run_peer_workloads` in another interpreter (e.g. `.venv-bench/bin/python`), via `--json`.

    For a caller whose own venv lacks the peers; returns {} (with a message) when that
    interpreter is missing or fails.
    """
    command = [str(python), str(Path(__file__).resolve()), "--json"] + (["--quick"] * quick)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"peers not measured: {exc}", file=sys.stderr)
        return {}
    sys.stderr.write(done.stderr)
    figures: dict[str, dict[str, float | None]] = json.loads(done.stdout)["figures"]
    return figures


def peer_versions() -> dict[str, str]:
    """Installed versions of the peer distributions, for the report header."""
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str] = {}
    for dist in ("agent-framework-core", "langgraph", "langgraph-checkpoint-sqlite"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            continue
    return found


def _table(results: dict[str, dict[str, float | None]]) -> str:
    peers = list(results)
    keys = list(KEYS) + sorted({k for f in results.values() for k in f} - set(KEYS))
    lines = ["figure".ljust(24) + "".join(p.rjust(18) for p in peers)]
    for key in keys:
        cells = (results[p].get(key) for p in peers)
        lines.append(key.ljust(24) + "".join(
            ("—" if v is None else f"{v:,.1f}").rjust(18) for v in cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Print the peers' figures as a table, or as JSON with `--json` (for a subprocess)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="loops divided by ten, one pass")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    results = run_peer_workloads(quick=args.quick)
    if not results and not args.json:
        sys.exit("no peer could be imported: use .venv-bench (bench/requirements-peers.txt)")
    # Other work on a shared machine inflates every figure (two busy cores slow W1 ~3x).
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"versions": peer_versions(), "load": load, "figures": results}))
        return
    print(", ".join(f"{k} {v}" for k, v in peer_versions().items()) + f"; load {load:.2f}")
    print(_table(results))


if __name__ == "__main__":
    main()
