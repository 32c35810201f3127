"""File storage across processes: SIGKILL mid-commit, the flock, and two writers racing."""

from __future__ import annotations

import asyncio
import fcntl
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from file_storage_child import numbered_state, race

from checkflow._fs import safe_name
from checkflow.checkpoints import Checkpoint
from checkflow.storage import FileCheckpointStorage

CHILD = Path(__file__).with_name("file_storage_child.py")
TRIALS = 50
KINDS = ("begin", "ack")


def run_until_killed(root: Path, rng: random.Random) -> tuple[set[int], int | None]:
    """Start the committing child, SIGKILL it at a random moment; return (acked, last begun)."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(root), "run-1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    acks_wanted = rng.randint(0, 3)
    try:
        assert child.stdout is not None
        for line in child.stdout:
            lines.append(line)
            acks = sum(seen.startswith("ack") for seen in lines)
            if line.startswith("begin") and acks == acks_wanted:
                time.sleep(rng.random() * 0.004)  # land anywhere inside this commit
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    assert child.stdout is not None
    with child.stdout:  # read() drains what the line iterator buffered, then the pipe
        lines += child.stdout.read().splitlines()
    numbers = {kind: [int(n) for k, n in map(str.split, lines) if k == kind] for kind in KINDS}
    return set(numbers["ack"]), max(numbers["begin"], default=None)


@pytest.mark.slow
async def test_sigkill_at_random_moments_never_loses_an_ack_or_corrupts(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    root = tmp_path / "checkpoints"
    head: int | None = None  # the head the previous trial left behind
    outcomes: set[str] = set()
    for _ in range(TRIALS):
        acked, begun = run_until_killed(root, rng)
        if begun is None:
            continue
        checkpoint = await FileCheckpointStorage(root).load("run-1")
        last_durable = max(acked) if acked else head
        head = checkpoint.head_snapshot.state["workflow_state"]["n"]
        assert head in (last_durable, begun)
        outcomes.add("landed unacknowledged" if head == begun not in acked else "did not land")
        lineage = [
            s.state["workflow_state"]["n"] for s in checkpoint.ancestors(head_id(checkpoint))
        ]
        assert lineage == list(range(head, -1, -1))
        assert checkpoint.head_snapshot.state == numbered_state(head)
    # the kills really did land on both sides of the commit point
    assert outcomes == {"landed unacknowledged", "did not land"}


def head_id(checkpoint: Checkpoint) -> str:
    assert checkpoint.head_snapshot_id is not None
    return checkpoint.head_snapshot_id


async def test_a_commit_from_another_process_waits_while_the_checkpoint_lock_is_held(
    tmp_path: Path,
) -> None:
    root = tmp_path / "checkpoints"
    await Checkpoint("run-1", checkpoint_storage=FileCheckpointStorage(root)).commit_snapshot(
        state=numbered_state(0)
    )
    folder = root / safe_name("run-1")
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), str(root), "run-1", "once",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    lock = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        assert await asyncio.wait_for(child.stdout.readline(), timeout=60) == b"loaded\n"
        fcntl.flock(lock, fcntl.LOCK_EX)  # this process now holds the checkpoint's lock
        size = (folder / "log").stat().st_size
        child.stdin.write(b"go\n")
        await child.stdin.drain()
        assert await asyncio.wait_for(child.stdout.readline(), timeout=60) == b"begin\n"
        with pytest.raises(TimeoutError):  # a bounded negative wait: no ack while we hold it
            await asyncio.wait_for(child.stdout.readline(), timeout=1)
        assert (folder / "log").stat().st_size == size
        fcntl.flock(lock, fcntl.LOCK_UN)
        assert await asyncio.wait_for(child.stdout.readline(), timeout=60) == b"ack\n"
    finally:
        os.close(lock)
        if child.returncode is None:
            child.kill()
        await asyncio.wait_for(child.wait(), timeout=60)
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert [s.state["workflow_state"]["n"] for s in loaded.snapshots] == [0, 1]


async def test_two_processes_released_from_a_barrier_exactly_one_commits(tmp_path: Path) -> None:
    """The race as it happens: both writers released at once, one must lose the head check.

    Without the flock this fails only sometimes (both may read the old head before either
    appends); what pins the lock deterministically is the held-lock test above.
    """
    root = tmp_path / "checkpoints"
    storage = FileCheckpointStorage(root)
    await Checkpoint("run-1", checkpoint_storage=storage).commit_snapshot(state=numbered_state(0))
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    children = [
        context.Process(target=race, args=(str(root), "run-1", barrier, results)) for _ in range(2)
    ]
    for child in children:
        child.start()
    outcomes = sorted(results.get(timeout=60) for _ in children)
    for child in children:
        child.join(timeout=60)
        assert child.exitcode == 0
    assert [kind for kind, _ in outcomes] == ["conflict", "ok"]
    loaded = await FileCheckpointStorage(root).load("run-1")
    assert loaded.head_snapshot_id == outcomes[1][1]
    assert len(loaded.snapshots) == 2
