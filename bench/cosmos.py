"""Benchmark: Cosmos DB checkpoint storage (on the local emulator) next to file storage.

Prints commit latency (median, p95) for 10 KB and 500 KB states and the time to load a
200-snapshot checkpoint, for both storages, with the Cosmos/file ratio. Asserts nothing.
Every commit carries fresh bytes, so the file storage's part sharing does not flatter it.

Run: ``.venv/bin/python bench/cosmos.py`` (needs node and ``make emulator``; it starts its own
emulator through ``tests/cosmos_emulator.py`` and stops it at the end). The emulator is an
in-memory Node.js server on loopback: the figures show checkflow's own overhead plus one HTTP
round trip, not a real account's network latency.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from cosmos_emulator import CosmosEmulator, cosmos_client, start_emulator

from checkflow.checkpoints import Checkpoint, CheckpointStorage
from checkflow.storage import FileCheckpointStorage
from checkflow.storage.cosmos import CosmosCheckpointStorage

COMMITS = {10_000: 200, 500_000: 40}
LOAD_SNAPSHOTS = 200
LOAD_REPEATS = 7


def make_state(size: int, serial: int) -> dict[str, Any]:
    """A four-bucket state of about ``size`` bytes of text that differs for every ``serial``."""
    unit = f"{serial:08d}-lorem ipsum dolor sit amet, consectetur adipiscing elit|"
    text = (unit * (size // len(unit) + 1))[:size]
    return {
        "workflow_state": {"iteration": serial, "status": "running"},
        "executor_states": {"worker": {"notes": text}},
        "edge_states": {},
        "messages": {"input": [serial], "pending": [], "output": []},
    }


async def commit_latencies(storage: CheckpointStorage, size: int, count: int) -> list[float]:
    """Seconds per ``commit_snapshot`` for ``count`` commits on one new checkpoint."""
    checkpoint = Checkpoint(f"bench-{uuid.uuid4().hex}", checkpoint_storage=storage)
    await checkpoint.commit_snapshot(state=make_state(size, -1))  # first commit creates
    timings = []
    for serial in range(count):
        state = make_state(size, serial)
        started = time.perf_counter()
        await checkpoint.commit_snapshot(state=state)
        timings.append(time.perf_counter() - started)
    return timings


async def load_times(storage: CheckpointStorage) -> list[float]:
    """Seconds per ``load`` of a checkpoint holding ``LOAD_SNAPSHOTS`` 10 KB snapshots."""
    checkpoint = Checkpoint(f"bench-load-{uuid.uuid4().hex}", checkpoint_storage=storage)
    for serial in range(LOAD_SNAPSHOTS):
        await checkpoint.commit_snapshot(state=make_state(10_000, serial))
    timings = []
    for _ in range(LOAD_REPEATS):
        started = time.perf_counter()
        loaded = await storage.load(checkpoint.checkpoint_id)
        timings.append(time.perf_counter() - started)
        assert len(loaded.snapshots) == LOAD_SNAPSHOTS
    return timings


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def row(label: str, cosmos: list[float], file: list[float]) -> None:
    cm, fm = statistics.median(cosmos), statistics.median(file)
    cp, fp = p95(cosmos), p95(file)
    print(
        f"{label:<28} cosmos {cm * 1e3:8.2f} ms (p95 {cp * 1e3:8.2f})   "
        f"file {fm * 1e3:8.2f} ms (p95 {fp * 1e3:8.2f})   cosmos/file x{cm / fm:5.2f}"
    )


async def run(emulator: CosmosEmulator, folder: Path) -> None:
    async with cosmos_client(emulator) as client:
        database = await client.create_database(f"bench-{uuid.uuid4().hex}")
        try:
            container = await database.create_container("checkpoints", partition_key=_pk())
            cosmos = CosmosCheckpointStorage(container)
            file = FileCheckpointStorage(folder)
            print(f"== checkpoint storage: Cosmos DB emulator ({emulator.endpoint}) vs files ==")
            for size, count in COMMITS.items():
                label = f"commit {size // 1000} KB state (n={count})"
                row(label, *await _both(commit_latencies, cosmos, file, size, count))
            row(
                f"load {LOAD_SNAPSHOTS} snapshots (n={LOAD_REPEATS})",
                *await _both(load_times, cosmos, file),
            )
        finally:
            await client.delete_database(database.id)


async def _both(
    measure: Callable[..., Awaitable[list[float]]], cosmos: Any, file: Any, *args: Any
) -> tuple[list[float], list[float]]:
    return await measure(cosmos, *args), await measure(file, *args)


def _pk() -> Any:
    from azure.cosmos import PartitionKey

    return PartitionKey(path="/pk")


def main() -> None:
    emulator = start_emulator()
    try:
        with tempfile.TemporaryDirectory(prefix="checkflow-bench-") as folder:
            asyncio.run(run(emulator, Path(folder)))
    finally:
        emulator.stop()


if __name__ == "__main__":
    main()
