"""Caller-owned checkpoints: snapshots, lineage, two heads, envelopes and the run guard."""

from checkflow.checkpoints._checkpoint import Checkpoint, CheckpointReference
from checkflow.checkpoints._guard import active_run
from checkflow.checkpoints._protocol import CheckpointStorage
from checkflow.checkpoints._snapshot import (
    FORMAT_VERSION,
    CheckpointSnapshot,
    Format,
    SnapshotRecord,
)

__all__ = [
    "FORMAT_VERSION",
    "Checkpoint",
    "CheckpointReference",
    "CheckpointSnapshot",
    "CheckpointStorage",
    "Format",
    "SnapshotRecord",
    "active_run",
]
