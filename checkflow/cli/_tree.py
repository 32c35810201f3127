"""``checkpoints tree``: a checkpoint's snapshot graph drawn as text.

A chain stays in one column and a branch point forks with ``├─``/``└─``; ``●`` marks the head.
The walk uses an explicit stack, so a lineage of any length or branching depth never
recurses. This module must never read state, only snapshot headers and metadata.
"""

from __future__ import annotations

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.hosting import inspect_metadata

__all__ = ["render_tree"]


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


def render_tree(checkpoint: Checkpoint) -> str:
    """The snapshot graph as text, roots in snapshot order, children in commit order."""
    head = checkpoint.head_snapshot_id
    lines: list[str] = []
    roots = [s for s in checkpoint.snapshots if s.parent_snapshot_id is None]
    stack: list[tuple[CheckpointSnapshot, str, str]] = [(r, "", "") for r in reversed(roots)]
    while stack:
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
