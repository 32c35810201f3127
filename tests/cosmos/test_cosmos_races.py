"""Writers racing for one checkpoint's head: the database decides, exactly one wins each time."""

from __future__ import annotations

import asyncio
import multiprocessing
from typing import Any

import pytest
from cosmos_emulator import CosmosEmulator, cosmos_client
from cosmos_support import make_state, race_from_own_process

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.errors import CheckpointConflictError
from checkflow.storage.cosmos import CosmosCheckpointStorage


async def _race(checkpoints: list[Checkpoint], round_no: int = 0) -> list[Any]:
    """Release every checkpoint's commit from one barrier; results in order, errors as values."""
    barrier = asyncio.Barrier(len(checkpoints))

    async def commit(index: int, checkpoint: Checkpoint) -> CheckpointSnapshot:
        await asyncio.wait_for(barrier.wait(), 10)
        return await checkpoint.commit_snapshot(state=make_state(f"r{round_no}-w{index}"))

    return await asyncio.gather(
        *(commit(i, c) for i, c in enumerate(checkpoints)), return_exceptions=True
    )


async def _seed(storage: CosmosCheckpointStorage) -> Checkpoint:
    checkpoint = Checkpoint("run-1", checkpoint_storage=storage)
    await checkpoint.commit_snapshot(state=make_state("root"))
    return checkpoint


async def test_two_objects_on_one_storage_exactly_one_commit_wins(
    cosmos_storage: CosmosCheckpointStorage,
) -> None:
    await _seed(cosmos_storage)
    both = [await cosmos_storage.load("run-1"), await cosmos_storage.load("run-1")]
    results = await _race(both)
    won = [r for r in results if isinstance(r, CheckpointSnapshot)]
    lost = [r for r in results if isinstance(r, CheckpointConflictError)]
    assert (len(won), len(lost)) == (1, 1)
    assert lost[0].actual_head_snapshot_id == won[0].snapshot_id
    assert (await cosmos_storage.load("run-1")).head_snapshot_id == won[0].snapshot_id


async def test_two_processes_on_their_own_clients_exactly_one_commit_wins(
    cosmos_emulator: CosmosEmulator, cosmos_storage: CosmosCheckpointStorage
) -> None:
    await _seed(cosmos_storage)
    container = cosmos_storage.container
    database = container.database_link.split("/")[-1]
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    args = (cosmos_emulator.endpoint, cosmos_emulator.key, database, container.id)
    workers = [
        context.Process(target=race_from_own_process, args=(*args, barrier, results))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    outcomes = [await asyncio.to_thread(results.get, True, 120) for _ in workers]
    for worker in workers:
        await asyncio.to_thread(worker.join, 60)
        assert worker.exitcode == 0
    assert sorted(kind for kind, _ in outcomes) == ["conflict", "won"]
    winner = next(sid for kind, sid in outcomes if kind == "won")
    assert next(sid for kind, sid in outcomes if kind == "conflict") == winner
    assert (await cosmos_storage.load("run-1")).head_snapshot_id == winner


@pytest.mark.slow
async def test_twenty_writers_for_fifty_rounds_lose_nothing_and_never_fork(
    cosmos_emulator: CosmosEmulator, cosmos_container: Any
) -> None:
    async with cosmos_client(cosmos_emulator) as second_client:
        database = second_client.get_database_client(cosmos_container.database_link.split("/")[-1])
        storages = [
            CosmosCheckpointStorage(cosmos_container),
            CosmosCheckpointStorage(database.get_container_client(cosmos_container.id)),
        ]
        await _seed(storages[0])
        writers = [await storages[i % 2].load("run-1") for i in range(20)]
        acknowledged: list[str] = []
        for round_no in range(50):
            results = await _race(writers, round_no)
            won = [r.snapshot_id for r in results if isinstance(r, CheckpointSnapshot)]
            unexpected = [r for r in results if isinstance(r, BaseException)]
            unexpected = [r for r in unexpected if not isinstance(r, CheckpointConflictError)]
            assert unexpected == [] and len(won) == 1, f"round {round_no}: {results}"
            acknowledged += won
            await asyncio.gather(*(w.refresh() for w in writers if w.head_snapshot_id != won[0]))
        loaded = await storages[1].load("run-1")
    lineage = [s.snapshot_id for s in reversed(loaded.ancestors(loaded.head_snapshot_id or ""))]
    assert lineage[1:] == acknowledged  # every acknowledged snapshot, in order, on one line
    assert len(loaded.snapshots) == len(acknowledged) + 1  # and nothing else: no fork
