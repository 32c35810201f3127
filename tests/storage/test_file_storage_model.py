"""Property: any sequence of commits, restarts and prunes reloads from file storage exactly as
the in-memory storage (the reference model) holds it."""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from checkflow.checkpoints import Checkpoint, CheckpointStorage
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage

Operation = tuple[str, int]
operations = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), st.integers(0, 3)),  # which executor's state changes
        st.tuples(st.just("restart"), st.integers(0, 3)),  # index into the snapshots
        st.tuples(st.just("prune"), st.integers(-8, 50)),  # kept snapshot's index, or none
    ),
    min_size=1,
    max_size=20,
)


def state_for(n: int, changed: int) -> dict[str, Any]:
    executors = {f"e{i}": {"v": n if i == changed else 0, "big": "z" * 500} for i in range(4)}
    return {
        "workflow_state": {"n": n},
        "executor_states": executors,
        "edge_states": {"e0->e1": (n, changed)},
        "messages": {"input": [n], "pending": [], "output": list(range(n % 3))},
    }


async def replay(storage: CheckpointStorage, ops: list[Operation]) -> Checkpoint:
    checkpoint = Checkpoint("model", checkpoint_storage=storage)
    counter = 0
    for kind, arg in ops:
        snapshots = checkpoint.snapshots
        if kind == "commit":
            counter += 1
            await checkpoint.commit_snapshot(state=state_for(counter, arg))
        elif kind == "restart" and snapshots:
            checkpoint.restart_from(snapshots[arg % len(snapshots)].snapshot_id)
        elif kind == "prune" and snapshots:
            keep = [snapshots[arg % len(snapshots)].snapshot_id] if arg >= 0 else []
            await storage.prune("model", keep=keep)
            await checkpoint.refresh()
    return checkpoint


def shape(checkpoint: Checkpoint) -> list[tuple[Any, ...]]:
    """The graph by content: (n, parent's n, is head, state) per snapshot in order."""
    n_of = {s.snapshot_id: s.state["workflow_state"]["n"] for s in checkpoint.snapshots}
    return [
        (
            n_of[s.snapshot_id],
            n_of.get(s.parent_snapshot_id or ""),
            s.snapshot_id == checkpoint.head_snapshot_id,
            s.state,
        )
        for s in checkpoint.snapshots
    ]


@given(ops=operations, fmt=st.sampled_from(["json", "msgpack"]))
def test_file_storage_reloads_what_the_reference_model_holds(ops: list[Operation], fmt) -> None:
    async def scenario(root: str) -> None:
        memory = InMemoryCheckpointStorage()
        await replay(memory, ops)
        await replay(FileCheckpointStorage(root, format=fmt), ops)
        if not await memory.list_checkpoint_ids():
            assert await FileCheckpointStorage(root).list_checkpoint_ids() == []
            return
        expected = await memory.load("model")
        reloaded = await FileCheckpointStorage(root).load("model")
        assert shape(reloaded) == shape(expected)

    with tempfile.TemporaryDirectory() as root:
        asyncio.run(scenario(root))
