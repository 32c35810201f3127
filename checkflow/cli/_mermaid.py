"""``checkpoints tree --mermaid``: a checkpoint's snapshot graph as a Mermaid flowchart.

One node per snapshot (its id, boundary, superstep and status), one edge per parent link, the
head marked with the ``head`` class. Node ids are ``s<position in the checkpoint>``, so any
snapshot id is safe inside its quoted label. This module must never read state, only snapshot
headers and metadata.
"""

from __future__ import annotations

from checkflow.checkpoints import Checkpoint
from checkflow.hosting import inspect_metadata

__all__ = ["render_mermaid"]


def render_mermaid(checkpoint: Checkpoint) -> str:
    """The snapshot graph as ``flowchart TD`` text, roots and children in commit order."""
    lines = ["flowchart TD", "  classDef head stroke-width:4px"]
    nodes = {s.snapshot_id: f"s{i}" for i, s in enumerate(checkpoint.snapshots)}
    for snapshot in checkpoint.snapshots:
        meta = inspect_metadata(snapshot)
        facts = [f"{k}={meta[k]}" for k in ("boundary", "superstep", "status")
                 if meta.get(k) is not None]
        text = " ".join([snapshot.snapshot_id, *facts]).replace("#", "#35;").replace('"', "#quot;")
        lines.append(f'  {nodes[snapshot.snapshot_id]}["{text}"]')
    for snapshot in checkpoint.snapshots:
        parent = snapshot.parent_snapshot_id
        if parent is not None:
            lines.append(f"  {nodes[parent]} --> {nodes[snapshot.snapshot_id]}")
    head = checkpoint.head_snapshot_id
    if head is not None:
        lines.append(f"  class {nodes[head]} head")
    return "\n".join(lines)
