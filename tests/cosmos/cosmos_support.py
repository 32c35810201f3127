"""Helpers shared by the Cosmos DB tests: states of a given size and raw item inspection."""

from __future__ import annotations

from typing import Any

from checkflow.storage.cosmos._layout import partition_key


def make_state(payload: Any = "x", **workflow_state: Any) -> dict[str, Any]:
    """A valid four-bucket snapshot state carrying ``payload``."""
    return {
        "workflow_state": {"iteration": 1, **workflow_state},
        "executor_states": {"worker": {"payload": payload}},
        "edge_states": {},
        "messages": {"input": [1], "pending": [], "output": []},
    }


def state_of_size(size: int, seed: str = "a") -> dict[str, Any]:
    """A state whose payload is ``size`` characters of varied (not compressible-looking) text."""
    unit = f"{seed}-0123456789abcdefghijklmnopqrstuvwxyz|"
    return make_state((unit * (size // len(unit) + 1))[:size])


async def partition_items(container: Any, checkpoint_id: str) -> dict[str, dict[str, Any]]:
    """Every item in the checkpoint's partition, by id, system fields included."""
    pk = partition_key(checkpoint_id)
    rows = container.query_items(
        "SELECT * FROM c WHERE c.pk = @pk",
        parameters=[{"name": "@pk", "value": pk}],
        partition_key=pk,
    )
    return {row["id"]: row async for row in rows}
