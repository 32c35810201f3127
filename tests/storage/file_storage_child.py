"""Child processes for the file-storage durability tests (a script and spawn targets).

``python file_storage_child.py ROOT ID`` commits forever to checkpoint ID under ROOT,
printing a flushed ``begin <n>`` before and ``ack <n>`` after each commit, until killed.
``python file_storage_child.py ROOT ID once`` loads checkpoint ID, prints ``loaded``, waits
for a line on stdin, then prints ``begin``, commits once and prints ``ack``.
``race`` is a multiprocessing target: load, wait at the barrier, commit once, report.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from checkflow.checkpoints import Checkpoint
from checkflow.errors import CheckpointConflictError, CheckpointNotFoundError
from checkflow.storage import FileCheckpointStorage


def numbered_state(n: int) -> dict[str, Any]:
    """Every commit changes a 20 KB part, so kills also land in the middle of writes."""
    return {
        "workflow_state": {"n": n, "payload": f"{n:08d}" * 2500},
        "executor_states": {"worker": {"seen": list(range(n % 50))}},
        "edge_states": {},
        "messages": {"input": [n], "pending": [], "output": []},
    }


async def commit_forever(root: str, checkpoint_id: str) -> None:
    storage = FileCheckpointStorage(root)
    try:
        checkpoint = await storage.load(checkpoint_id)
        n = checkpoint.head_snapshot.state["workflow_state"]["n"] + 1
    except CheckpointNotFoundError:
        checkpoint, n = Checkpoint(checkpoint_id, checkpoint_storage=storage), 0
    while True:
        print(f"begin {n}", flush=True)
        await checkpoint.commit_snapshot(state=numbered_state(n))
        print(f"ack {n}", flush=True)
        n += 1


async def commit_once_when_told(root: str, checkpoint_id: str) -> None:
    checkpoint = await FileCheckpointStorage(root).load(checkpoint_id)
    n = checkpoint.head_snapshot.state["workflow_state"]["n"] + 1
    print("loaded", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    print("begin", flush=True)
    await checkpoint.commit_snapshot(state=numbered_state(n))
    print("ack", flush=True)


def race(root: str, checkpoint_id: str, barrier: Any, results: Any) -> None:
    async def main() -> None:
        checkpoint = await FileCheckpointStorage(root).load(checkpoint_id)
        await asyncio.to_thread(barrier.wait, 60)
        try:
            snapshot = await checkpoint.commit_snapshot(state=numbered_state(1))
        except CheckpointConflictError:
            results.put(("conflict", None))
        else:
            results.put(("ok", snapshot.snapshot_id))

    asyncio.run(main())


if __name__ == "__main__":
    once = sys.argv[3:] == ["once"]
    asyncio.run((commit_once_when_told if once else commit_forever)(sys.argv[1], sys.argv[2]))
