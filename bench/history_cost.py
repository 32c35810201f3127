"""Cost per conversation as history grows: does a request stay as cheap as on a fresh one?

One file-backed checkpoint is grown to 1,000 snapshots and 1,000 pending requests (500 runs,
each accepting a message and parking two requests: an entry snapshot plus one superstep). Then
one more run (commit cost) and one ``load()`` are timed on it and on a fresh checkpoint, and
the ratios printed; also the process RSS, and the bytes the log grows by for a run whose
message is a 1 MiB string (target: under 3 MiB). The issue's targets: within 2x of a fresh
checkpoint, RSS under 200 MB. Figures are printed, never asserted.

    python bench/history_cost.py [--runs 500] [--repeat 5]

This script must never leave files behind: it works in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from checkflow import FileCheckpointStorage
from checkflow.workflows import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


class Asker(Executor):
    """Parks two questions for every message it gets (nobody answers them)."""

    @handler
    async def ask(self, message: str, ctx: WorkflowContext) -> None:
        await ctx.request_info({"about": message[:64], "n": 1}, response_type=bool)
        await ctx.request_info({"about": message[:64], "n": 2}, response_type=bool)

    @response_handler
    async def answered(self, request: dict, answer: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output(answer)


def build() -> Workflow:
    return WorkflowBuilder(start_executor=Asker(id="asker"), name="history").build()


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def log_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("log"))


async def timed_run(workflow: Workflow, storage: FileCheckpointStorage, cid: str,
                    message: str) -> float:
    start = time.perf_counter()
    checkpoint = await storage.load(cid)
    await workflow.run(message, checkpoint=checkpoint)
    return time.perf_counter() - start


async def main(runs: int, repeat: int) -> None:
    workflow = build()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        storage = FileCheckpointStorage(root)
        big = workflow.create_checkpoint(checkpoint_id="big", checkpoint_storage=storage)
        grow_start = time.perf_counter()
        for n in range(runs):  # as a server does: load the conversation's checkpoint per request
            await workflow.run(f"message {n}", checkpoint=big)
            big = await storage.load("big")
        del big
        grow = time.perf_counter() - grow_start
        loaded = await storage.load("big")
        pending = len(loaded.head_snapshot.state["messages"]["pending"]  # type: ignore[union-attr]
                       .get("requests", {}))
        print(f"grew one checkpoint: {len(loaded.snapshots)} snapshots, {pending} pending "
              f"requests, {log_bytes(root) / 2**20:.1f} MiB of log in {grow:.1f} s")

        fresh_ids = [f"fresh-{i}" for i in range(repeat)]
        for cid in fresh_ids:
            await workflow.run("first", checkpoint=workflow.create_checkpoint(
                checkpoint_id=cid, checkpoint_storage=storage))
        big_run = [await timed_run(workflow, storage, "big", "one more") for _ in range(repeat)]
        fresh_run = [await timed_run(workflow, storage, cid, "one more") for cid in fresh_ids]
        big_load, fresh_load = [], []
        for cid in fresh_ids:
            cold = FileCheckpointStorage(root)  # a new instance: nothing cached
            start = time.perf_counter()
            await cold.load("big")
            big_load.append(time.perf_counter() - start)
            start = time.perf_counter()
            await cold.load(cid)
            fresh_load.append(time.perf_counter() - start)
        for name, slow, quick in (("load + run + commit", big_run, fresh_run),
                                  ("cold load", big_load, fresh_load)):
            s, q = statistics.median(slow), statistics.median(quick)
            print(f"{name:>20}: big {s * 1e3:8.2f} ms, fresh {q * 1e3:8.2f} ms, "
                  f"ratio {s / q:6.2f}x (target <= 2x)")

        before = log_bytes(root)
        body = os.urandom(2**19).hex()  # 1 MiB that no chunking can share with itself
        await workflow.run(body, checkpoint=workflow.create_checkpoint(
            checkpoint_id="mib", checkpoint_storage=storage))
        written = log_bytes(root) - before
        print(f"  1 MiB message run: {written / 2**20:.2f} MiB written (target < 3 MiB)")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"                RSS: {rss_mb():.0f} MB now, {peak:.0f} MB peak "
              "(target < 200 MB)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.runs, arguments.repeat))
