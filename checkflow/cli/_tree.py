"""``checkpoints tree``: a checkpoint's snapshot graph drawn as text.

A chain stays in one column and a branch point forks with ``├─``/``└─``; ``●`` marks the head.
The walk uses an explicit stack, so a lineage of any length or branching depth never
recurses. This module must never read state, only snapshot headers and metadata.
"""

from __future__ import annotations

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.hosting import inspect_metadata

__all__ = ["render_tree", "subtree"]


def _label(snapshot: CheckpointSnapshot, head: str | None) -> str:
    meta = inspect_metadata(snapshot)
    parts = [snapshot.snapshot_id]
    for key in ("boundary", "superstep", "status"):
        if meta.get(key) is not None:
            parts.append(f"{key}={meta[key]}")
    parts.append(snapshot.timestamp)
    if snapshot.snapshot_id == head:
        parts.append("<- head")
    return "  ".join(str(p) for p in parts)


def subtree(checkpoint: Checkpoint, since: str) -> list[CheckpointSnapshot]:
    """``since`` and its descendants, in snapshot order (``SnapshotNotFoundError`` if unknown)."""
    inside = {checkpoint.get_snapshot(since).snapshot_id}
    for snapshot in checkpoint.snapshots:  # parents come before children in snapshot order
        if snapshot.parent_snapshot_id in inside:
            inside.add(snapshot.snapshot_id)
    return [s for s in checkpoint.snapshots if s.snapshot_id in inside]


def render_tree(checkpoint: Checkpoint, *, since: str | None = None,
                limit: int | None = None) -> str:
    """The snapshot graph as text, roots in snapshot order, children in commit order.

    ``since`` draws only the subtree from that snapshot; ``limit`` stops after that many
    snapshots, with a last line saying how many were left out.
    """
    head = checkpoint.head_snapshot_id
    lines: list[str] = []
    roots = ([checkpoint.get_snapshot(since)] if since is not None else
             [s for s in checkpoint.snapshots if s.parent_snapshot_id is None])
    stack: list[tuple[CheckpointSnapshot, str, str]] = [(r, "", "") for r in reversed(roots)]
    total = len(checkpoint.snapshots) if since is None else len(subtree(checkpoint, since))
    while stack:
        if limit is not None and len(lines) >= limit:
            lines.append(f"... {total - len(lines)} more snapshot(s) (raise --limit)")
            break
        snapshot, first, rest = stack.pop()
        marker = "●" if snapshot.snapshot_id == head else "○"
        lines.append(f"{first}{marker} {_label(snapshot, head)}")
        children = checkpoint.children(snapshot.snapshot_id)
        if len(children) == 1:
            stack.append((children[0], rest, rest))  # a chain stays in its column
            continue
        for i in reversed(range(len(children))):
            last = i == len(children) - 1
            stack.append((children[i], rest + ("└─" if last else "├─"),
                          rest + ("  " if last else "│ ")))
    return "\n".join(lines)
