"""Snapshot-graph arithmetic shared by storage backends (which snapshots a prune removes).

Pure functions over parent links; this module never touches bytes or a backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from checkflow.errors import SnapshotNotFoundError

__all__ = ["unreachable"]


def unreachable(
    checkpoint_id: str,
    parents: Mapping[str, str | None],
    *,
    head: str | None,
    keep: Iterable[str],
) -> list[str]:
    """Ids not on the lineage of ``head`` or of any kept id, in ``parents`` order.

    ``parents`` maps every stored snapshot id to its parent id. A kept id the checkpoint
    does not hold raises ``SnapshotNotFoundError`` (a typo must not prune a branch).
    """
    roots = list(keep)
    for snapshot_id in roots:
        if snapshot_id not in parents:
            raise SnapshotNotFoundError(checkpoint_id, snapshot_id)
    if head is not None:
        roots.append(head)
    alive: set[str] = set()
    for snapshot_id in roots:
        current: str | None = snapshot_id
        while current is not None and current not in alive:
            alive.add(current)
            current = parents.get(current)
    return [s for s in parents if s not in alive]
