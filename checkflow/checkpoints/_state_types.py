"""Checkpoints as values inside other state (an ``AgentSession.state``, a parent workflow's).

A storage-backed checkpoint is kept as a ``CheckpointReference`` (id and persisted head): the
storage stays the truth for its snapshots, and the codec, which is synchronous and knows no
storage, decodes it as the reference for a host to ``load()``. An unattached checkpoint is
kept whole. Importing this module registers both types; it must never load from a storage.
"""

from __future__ import annotations

from typing import Any

from checkflow.checkpoints._checkpoint import Checkpoint, CheckpointReference
from checkflow.state import register_state_type

__all__: list[str] = []


def _encode(checkpoint: Checkpoint) -> dict[str, Any]:
    if checkpoint.checkpoint_storage is not None:
        reference = checkpoint.reference()
        return {"reference": [reference.checkpoint_id, reference.head_snapshot_id]}
    return {"checkpoint": checkpoint.to_bytes("msgpack")}


def _decode(raw: dict[str, Any]) -> Checkpoint | CheckpointReference:
    if "reference" in raw:
        checkpoint_id, head_snapshot_id = raw["reference"]
        return CheckpointReference(checkpoint_id, head_snapshot_id)
    return Checkpoint.from_bytes(raw["checkpoint"], "msgpack", source="embedded checkpoint")


register_state_type(CheckpointReference, type_id="checkflow.CheckpointReference")
register_state_type(Checkpoint, type_id="checkflow.Checkpoint", encoder=_encode, decoder=_decode)
