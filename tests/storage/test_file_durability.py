"""File storage across processes: SIGKILL mid-commit, and two writers racing from a barrier."""

from __future__ import annotations

import multiprocessing
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from file_storage_child import numbered_state, race

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


async def test_two_processes_released_from_a_barrier_exactly_one_commits(tmp_path: Path) -> None:
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
