"""Benchmark: the workflow engine on W1-W4, against agent-framework and LangGraph.

Prints µs per superstep, bytes per snapshot, ms, and checkflow's ratio to each peer
(peer / checkflow: above 1 means checkflow is faster or smaller). Asserts nothing; the
targets are in the engine issue (W1 <= 150 µs one-shot, <= 600 µs durable; W2 <= 1.5 ms and
<= 8 KiB per unchanged snapshot; W4 <= 10 ms).

Workloads (shared with ``bench/_peers_engine.py``, which times the peers):

- W1: start -> worker self-loop of 1,000 supersteps: one-shot (no checkpoint: commits go to
  the unattached in-memory checkpoint), in-memory storage, file storage.
  W1 one-shot is also timed with a pass-through interceptor and with telemetry
  (``checkflow.telemetry.OpenTelemetryInterceptor``): on the OpenTelemetry API's no-op
  providers (``W1_none_otel_noop``) and on the SDK with a span exporter that drops every
  span (``W1_none_otel_sdk``); ``W1_none`` is telemetry off. Needs the ``otel`` extra.
- W2: 200 supersteps carrying the ~100 KB ``make_shared_state()`` in shared state, written
  once by the start step and unchanged after; file storage: µs per superstep, bytes per
  snapshot on disk.
- W2 "touch": the same 200 supersteps, the worker rewriting the payload every superstep
  (``touched()``), in the three W1 modes; µs per superstep.
- W3: 100 concurrent 10-step runs on ONE workflow, each with its own in-memory checkpoint.
- W4: a file-backed run with the W2 state stopped after 100 supersteps with work pending; ms
  to load it from file and finish one more superstep (commit included).

Run it:

    .venv/bin/python bench/engine.py [--quick] [--no-peers]

``--before DIR`` times checkflow only, from this tree and from another source tree (a
``git worktree`` of the base commit) alternately, ``--rounds`` times each, in fresh processes
(this harness, either package first on ``PYTHONPATH``), and prints the medians side by side
with the load average of each round: before/after figures taken under the same machine load.

The peers live ONLY in a separate venv (never in .venv), set up once with:

    python3 -m venv .venv-bench
    .venv-bench/bin/pip install -r bench/requirements-peers.txt -e .

When this interpreter cannot import a peer, the peers are measured by
``.venv-bench/bin/python bench/_peers_engine.py --json`` in a subprocess; a peer that cannot be
imported there either is skipped with a message. This script never asserts on speed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _peers_engine beside us

from _peers_engine import (
    KEYS,
    Sizes,
    make_shared_state,
    measure_peer_workloads,
    peer_versions,
    run_peer_workloads_in,
    touched,
)
from codec_and_storage import append_fsync, bare_write_fsync

from checkflow.checkpoints import CheckpointStorage
from checkflow.errors import WorkflowConvergenceError
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage
from checkflow.workflows import (
    Executor,
    Interceptor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)

Figures = dict[str, float | None]
ROOT = Path(__file__).resolve().parents[1]


class Start(Executor):
    """Puts the payload (if any) in shared state once, then starts the loop."""

    def __init__(self, id: str, payload: Any = None) -> None:
        super().__init__(id)
        self._payload = payload

    @handler
    async def begin(self, n: int, ctx: WorkflowContext[int]) -> None:
        if self._payload is not None:
            ctx.set_state("payload", self._payload)
        await ctx.send_message(n)


class Worker(Executor):
    """Sends ``n - 1`` to itself until 0; with ``touch``, rewrites the payload every step."""

    def __init__(self, id: str, touch: Any = None) -> None:
        super().__init__(id)
        self._touch = touch

    @handler
    async def step(self, n: int, ctx: WorkflowContext[int]) -> None:
        if self._touch is not None:
            ctx.set_state("payload", touched(self._touch, n))
        if n > 0:
            await ctx.send_message(n - 1)


def build(payload: Any = None, max_iterations: int = 10_000, touch: bool = False) -> Workflow:
    start = Start(id="start", payload=payload)
    worker = Worker(id="worker", touch=payload if touch else None)
    return (WorkflowBuilder(start_executor=start, name="bench", max_iterations=max_iterations)
            .add_edge(start, worker).add_edge(worker, worker).build())


def message_for(steps: int) -> int:
    """The start message that makes a run last exactly ``steps`` supersteps."""
    return steps - 2


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


async def loop(mode: str, steps: int, payload: Any, workdir: Path,
               interceptors: Sequence[Interceptor] = (), touch: bool = False) -> Figures:
    """One timed run of ``steps`` supersteps; µs per superstep and bytes per snapshot."""
    workflow = build(payload, touch=touch)
    storage: CheckpointStorage | None = {
        "none": None,
        "memory": InMemoryCheckpointStorage(),
        "durable": FileCheckpointStorage(workdir / "checkpoints"),
    }[mode]
    checkpoint = None if storage is None else workflow.create_checkpoint(
        checkpoint_storage=storage)
    began = time.perf_counter()
    result = await workflow.run(message_for(steps), checkpoint=checkpoint,
                                interceptors=interceptors)
    seconds = time.perf_counter() - began
    snapshots = len(result.checkpoint.snapshots)
    if mode != "none":  # a one-shot run is encoded once, when it ends
        assert snapshots == steps + 1, snapshots
    stored = folder_bytes(workdir / "checkpoints") if mode == "durable" else None
    return {"us": seconds / steps * 1e6,
            "bytes_per_snapshot": None if stored is None else stored / snapshots}


async def concurrent(runs: int, steps: int) -> Figures:
    workflow, storage = build(), InMemoryCheckpointStorage()
    checkpoints = [workflow.create_checkpoint(checkpoint_storage=storage) for _ in range(runs)]
    began = time.perf_counter()
    await asyncio.gather(*(workflow.run(message_for(steps), checkpoint=cp)
                           for cp in checkpoints))
    return {"W3_ms": (time.perf_counter() - began) * 1e3}


async def resume_after(steps: int, payload: Any, workdir: Path) -> Figures:
    storage = FileCheckpointStorage(workdir / "checkpoints")
    first = build(payload, max_iterations=steps)
    checkpoint = first.create_checkpoint(checkpoint_id="w4", checkpoint_storage=storage)
    with contextlib.suppress(WorkflowConvergenceError):  # stops after `steps`, work pending
        await first.run(10 * steps, checkpoint=checkpoint)
    rebuilt = build(payload, max_iterations=1)  # same graph: same signature
    began = time.perf_counter()
    fresh = FileCheckpointStorage(workdir / "checkpoints")
    loaded = await fresh.load("w4")
    with contextlib.suppress(WorkflowConvergenceError):  # one more superstep, committed
        await rebuilt.run(checkpoint=loaded)
    seconds = time.perf_counter() - began
    assert loaded.head_snapshot is not None
    assert loaded.head_snapshot.metadata["superstep"] == steps + 1
    return {"W4_ms": seconds * 1e3}


async def repeat(times: int, once: Callable[[Path], Awaitable[Figures]]) -> Figures:
    samples = []
    for _ in range(times):
        with tempfile.TemporaryDirectory(prefix="checkflow-bench-") as tmp:
            samples.append(await once(Path(tmp)))
    return {k: statistics.median(s[k] for s in samples) if samples[0][k] is not None else None
            for k in samples[0]}


async def measure_checkflow(sizes: Sizes) -> Figures:
    state = make_shared_state()
    figures: Figures = dict.fromkeys(KEYS)
    await repeat(1, lambda d: loop("none", 3, None, d))  # warm up
    for mode in ("none", "memory", "durable"):
        w1 = await repeat(sizes.repeats, lambda d, m=mode: loop(m, sizes.w1_steps, None, d))
        figures[f"W1_{mode}_us"] = w1["us"]
    passing = [Interceptor()]  # all four hooks, each just calling through
    w1 = await repeat(sizes.repeats, lambda d: loop("none", sizes.w1_steps, None, d, passing))
    figures["W1_none_intercepted_us"] = w1["us"]
    for key, interceptors in telemetry_interceptors().items():
        w1 = await repeat(sizes.repeats,
                          lambda d, i=interceptors: loop("none", sizes.w1_steps, None, d, i))
        figures[key] = w1["us"]
    w2 = await repeat(sizes.repeats, lambda d: loop("durable", sizes.w2_steps, state, d))
    figures["W2_durable_us"] = w2["us"]
    figures["W2_bytes_per_snapshot"] = w2["bytes_per_snapshot"]
    for mode in ("none", "memory", "durable"):
        w2 = await repeat(sizes.repeats, lambda d, m=mode: loop(m, sizes.w2_steps, state, d,
                                                               touch=True))
        figures[f"W2_touch_{mode}_us"] = w2["us"]
    figures.update(await repeat(sizes.repeats, lambda _: concurrent(sizes.w3_runs,
                                                                    sizes.w3_steps)))
    figures.update(await repeat(sizes.repeats, lambda d: resume_after(sizes.w4_steps, state,
                                                                     d)))
    return figures


TELEMETRY_KEYS = ["W1_none_otel_noop_us", "W1_none_otel_sdk_us"]


def telemetry_interceptors() -> dict[str, list[Interceptor]]:
    """W1 with ``OpenTelemetryInterceptor`` on the API's no-op providers, and on the SDK
    with a span exporter that drops everything (and a metric reader nobody collects)."""
    try:
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            SimpleSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        from checkflow.telemetry import OpenTelemetryInterceptor
    except ImportError as exc:
        print(f"telemetry figures skipped: {exc}", file=sys.stderr)
        return {}

    class Dropped(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    sdk = TracerProvider()
    sdk.add_span_processor(SimpleSpanProcessor(Dropped()))
    return {
        "W1_none_otel_noop_us": [OpenTelemetryInterceptor(trace.NoOpTracerProvider(),
                                                          metrics.NoOpMeterProvider())],
        "W1_none_otel_sdk_us": [OpenTelemetryInterceptor(
            sdk, MeterProvider(metric_readers=[InMemoryMetricReader()]))],
    }


def measure_peers(quick: bool) -> dict[str, Figures]:
    if all(importlib.util.find_spec(m) for m in ("agent_framework", "langgraph")):
        return asyncio.run(measure_peer_workloads(quick=quick))
    python = ROOT / ".venv-bench" / "bin" / "python"
    if not python.exists():
        print("peers skipped: agent_framework / langgraph cannot be imported here and there "
              "is no .venv-bench (see this script's docstring)", file=sys.stderr)
        return {}
    return run_peer_workloads_in(python, quick=quick)


def report(ours: Figures, peers: dict[str, Figures]) -> str:
    names = list(peers)
    header = "figure".ljust(24) + "checkflow".rjust(12) + "".join(
        f"{n[:16]:>18}{'ratio':>8}" for n in names)
    lines = [header]
    keys = [*KEYS[:1], "W1_none_intercepted_us", *TELEMETRY_KEYS, *KEYS[1:],
            "W1_durable_sync_us", "W2_durable_sync_us", "W2_touch_durable_sync_us"]
    for key in keys:
        mine = ours.get(key)
        cells = "" if mine is None else f"{mine:,.1f}"
        if mine is None and not any(peers[n].get(key) for n in names):
            continue
        row = key.ljust(24) + cells.rjust(12)
        for name in names:
            theirs = peers[name].get(key)
            if key.endswith("_sync_us"):
                mine_for_ratio = ours.get(key.replace("_sync", ""))
            else:
                mine_for_ratio = mine
            ratio = (f"{theirs / mine_for_ratio:.1f}x" if theirs and mine_for_ratio else "—")
            row += ("—" if theirs is None else f"{theirs:,.1f}").rjust(18) + ratio.rjust(8)
        lines.append(row)
    return "\n".join(lines)


def touch_floor(payload: Any, rounds: int = 50) -> str:
    """The physical floor of one durable W2 "touch" superstep on this machine."""
    import msgspec

    plain = msgspec.to_builtins(payload)
    encoder = msgspec.json.Encoder()
    began = time.perf_counter()
    for _ in range(rounds):
        data = encoder.encode(plain)
    encode = (time.perf_counter() - began) / rounds
    with tempfile.TemporaryDirectory(prefix="checkflow-bench-") as tmp:
        path = os.path.join(tmp, "floor")
        write = bare_write_fsync(path, data, rounds)
        # The same two steps alternating, as a superstep does them: on a virtual disk an
        # fsync that follows other work costs several times one that follows another fsync.
        began = time.perf_counter()
        for _ in range(rounds):
            append_fsync(path, encoder.encode(plain))
        alternating = (time.perf_counter() - began) / rounds
    return (f"  floor: msgspec.json encode {encode * 1e6:,.0f} µs + write+fsync "
            f"{write * 1e6:,.0f} µs = {(encode + write) * 1e6:,.0f} µs; the two alternating "
            f"in one loop (as a superstep does them): {alternating * 1e6:,.0f} µs")


def measure_in(tree: Path, quick: bool) -> Figures:
    """This harness's checkflow figures in a fresh process, with ``tree``'s package first."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT / "bench")])}
    argv = [sys.executable, str(Path(__file__).resolve()), "--emit-json"]
    out = subprocess.run([*argv, *(["--quick"] if quick else [])], env=env, cwd=tree,
                         check=True, capture_output=True, text=True, timeout=1800).stdout
    figures: Figures = json.loads(out.splitlines()[-1])
    return figures


def before_and_after(before: Path, rounds: int, quick: bool) -> str:
    """The figures of ``before`` and of this tree, measured alternately, as a table."""
    runs: dict[str, list[Figures]] = {"before": [], "after": []}
    loads = []
    for _ in range(rounds):
        for name, tree in (("before", before), ("after", ROOT)):
            runs[name].append(measure_in(tree, quick))
        loads.append(f"{os.getloadavg()[0]:.2f}")
    lines = [f"load per round: {', '.join(loads)}; medians of {rounds} rounds",
             "figure".ljust(28) + "before".rjust(12) + "after".rjust(12) + "after/before".rjust(14)]
    for key in runs["after"][0]:
        values = {name: [f[key] for f in found if f.get(key) is not None]
                  for name, found in runs.items()}
        if not values["before"] or not values["after"]:
            continue
        old, new = statistics.median(values["before"]), statistics.median(values["after"])
        lines.append(f"{key:28}{old:12,.1f}{new:12,.1f}{new / old:13.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="loops divided by ten, one pass")
    parser.add_argument("--no-peers", action="store_true", help="time checkflow only")
    parser.add_argument("--before", type=Path, metavar="DIR",
                        help="also time the checkflow source tree in DIR, alternately")
    parser.add_argument("--rounds", type=int, default=3, help="rounds for --before")
    parser.add_argument("--emit-json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.before is not None:
        print(before_and_after(args.before.resolve(), args.rounds, args.quick))
        return
    sizes = Sizes.for_pass(quick=args.quick)
    ours = asyncio.run(measure_checkflow(sizes))
    if args.emit_json:
        print(json.dumps(ours))
        return
    peers = {} if args.no_peers else measure_peers(args.quick)
    versions = ", ".join(f"{k} {v}" for k, v in peer_versions().items())
    print(f"load {os.getloadavg()[0]:.2f}" + (f"; {versions}" if versions else ""))
    print("µs per superstep (W1, W2), bytes per snapshot, ms (W3, W4); "
          "ratio = peer / checkflow (>1: checkflow faster or smaller)")
    print(report(ours, peers))
    print("targets: W1_none <= 150 µs, W1_durable <= 600 µs, W2_durable <= 1,500 µs and "
          "<= 8,192 bytes per snapshot, W4 <= 10 ms; W2_touch_* below LangGraph's in all three "
          "modes, W2_touch_durable within 2x of the floor (one msgspec encode of the payload "
          "+ one write+fsync of it):")
    print(touch_floor(make_shared_state()))


if __name__ == "__main__":
    main()
