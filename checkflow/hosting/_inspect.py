"""Read-only views of checkpoints for people and tools: summaries, state, and exports.

Everything here decodes with the codec's inspection decode, so a snapshot holding types this
process never registered (the CLI runs without the workflow's code) is shown with opaque
placeholders instead of failing. This module must never be used to load state that will run,
and must never write to a storage.
"""

from __future__ import annotations

from typing import Any

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.hosting._views import inspect_metadata, jsonable, snapshot_summary
from checkflow.state import decode_for_inspection

__all__ = [
    "checkpoint_export",
    "checkpoint_summary",
    "inspect_state",
    "snapshot_detail",
]


def inspect_state(snapshot: CheckpointSnapshot) -> dict[str, Any]:
    """The snapshot's four buckets, decoded for display (unknown types stay opaque)."""
    record = snapshot.record
    return {
        bucket: {
            key: decode_for_inspection(data, format=record.format) for key, data in parts.items()
        }
        for bucket, parts in record.parts.items()
    }


def snapshot_detail(snapshot: CheckpointSnapshot, head_snapshot_id: str | None) -> dict[str, Any]:
    """The snapshot list entry plus its state, JSON-native."""
    body = snapshot_summary(snapshot, head_snapshot_id)
    body["state"] = jsonable(inspect_state(snapshot))
    return body


def head_status(checkpoint: Checkpoint) -> str | None:
    """The head's run status as recorded in its metadata (``None`` for an empty checkpoint)."""
    head = checkpoint.head_snapshot
    if head is None:
        return None
    status = inspect_metadata(head).get("status")
    return str(status).lower() if status is not None else None


def checkpoint_summary(checkpoint: Checkpoint) -> dict[str, Any]:
    """Identity, head, head status and size of a checkpoint, JSON-native.

    ``head_snapshot_id`` is the checkpoint's working head; where storage's persisted head
    differs (a conversation positioned at its last good turn), it is shown as
    ``storage_head_snapshot_id`` too.
    """
    return {
        "checkpoint_id": checkpoint.checkpoint_id,
        "workflow_name": checkpoint.workflow_name,
        "graph_signature_hash": checkpoint.graph_signature_hash,
        "head_snapshot_id": checkpoint.head_snapshot_id,
        "status": head_status(checkpoint),
        "snapshot_count": len(checkpoint.snapshots),
        "tips": [s.snapshot_id for s in checkpoint.tips()],
        **({"storage_head_snapshot_id": checkpoint.persisted_head_snapshot_id}
           if checkpoint.persisted_head_snapshot_id != checkpoint.head_snapshot_id else {}),
    }


def checkpoint_export(checkpoint: Checkpoint) -> dict[str, Any]:
    """The whole checkpoint with every snapshot's state, JSON-native, for archiving or diffing."""
    head = checkpoint.head_snapshot_id
    body = checkpoint_summary(checkpoint)
    body["snapshots"] = [snapshot_detail(s, head) for s in checkpoint.snapshots]
    return body
