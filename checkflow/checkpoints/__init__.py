"""Caller-owned checkpoints: snapshots, lineage, two heads, envelopes and the run guard.

A ``Checkpoint`` inside other state (e.g. a session) encodes whole when unattached and as a
``CheckpointReference`` (decoded as such, for the host to ``load()``) when storage-backed.
This module only re-exports (and registers the state types); it never imports a storage or
the workflow engine.
"""

from checkflow.checkpoints import _state_types  # noqa: F401 - registers the state types
from checkflow.checkpoints._checkpoint import Checkpoint, CheckpointReference
from checkflow.checkpoints._guard import active_run
from checkflow.checkpoints._protocol import CheckpointStorage, ExistenceCheck
from checkflow.checkpoints._snapshot import (
    FORMAT_VERSION,
    CheckpointSnapshot,
    EncodedPart,
    Format,
    SnapshotHeader,
    SnapshotRecord,
)

__all__ = [
    "FORMAT_VERSION",
    "Checkpoint",
    "CheckpointReference",
    "CheckpointSnapshot",
    "CheckpointStorage",
    "EncodedPart",
    "ExistenceCheck",
    "Format",
    "SnapshotHeader",
    "SnapshotRecord",
    "active_run",
]
