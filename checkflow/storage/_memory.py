"""``InMemoryCheckpointStorage``: checkpoints in a dict, with the durable backends' semantics.

Same compare-and-swap, not-found and prune behaviour as the file and Cosmos storages, so code
tested against memory behaves the same on disk. Records are immutable and shared, never
copied; nothing here survives the process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, Format, SnapshotRecord
from checkflow.errors import CheckpointConflictError, CheckpointNotFoundError
from checkflow.storage._graph import unreachable
from checkflow.storage._verify import VerifyReport, check_records

__all__ = ["InMemoryCheckpointStorage"]


@dataclass
class _Stored:
    workflow_name: str
    graph_signature_hash: str
    head: str | None = None
    records: dict[str, SnapshotRecord] = field(default_factory=dict)
    pruned: set[str] = field(default_factory=set)


class InMemoryCheckpointStorage:
    """Checkpoints held in this process, for tests, one-shot runs and single-process hosts."""

    def __init__(self, *, format: Format = "json") -> None:
        self.format: Format = format
        self._checkpoints: dict[str, _Stored] = {}
        self._lock = threading.Lock()  # commits from several event loops/threads stay atomic

    async def commit_snapshot(
        self,
        checkpoint: Checkpoint,
        snapshot: CheckpointSnapshot,
        *,
        expected_head_snapshot_id: str | None,
    ) -> None:
        """Store ``snapshot`` and make it the head if the head is still the expected one."""
        cid = checkpoint.checkpoint_id
        with self._lock:
            stored = self._checkpoints.get(cid)
            actual = stored.head if stored is not None else None
            if actual != expected_head_snapshot_id:
                raise CheckpointConflictError(
                    cid,
                    expected_head_snapshot_id=expected_head_snapshot_id,
                    actual_head_snapshot_id=actual,
                )
            if stored is None:
                stored = self._checkpoints[cid] = _Stored("", "")
            stored.workflow_name = checkpoint.workflow_name
            stored.graph_signature_hash = checkpoint.graph_signature_hash
            stored.records[snapshot.snapshot_id] = snapshot.record
            stored.head = snapshot.snapshot_id

    def checkpoint_exists(self, checkpoint_id: str) -> bool:
        """Whether ``checkpoint_id`` is stored (``ExistenceCheck``: a dict lookup)."""
        with self._lock:
            return checkpoint_id in self._checkpoints

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """A fresh Checkpoint object attached to this storage."""
        with self._lock:
            stored = self._get(checkpoint_id)
            records = list(stored.records.values())
            head = stored.head
            name, signature = stored.workflow_name, stored.graph_signature_hash
            pruned = frozenset(stored.pruned)
        return Checkpoint(
            checkpoint_id,
            workflow_name=name,
            graph_signature_hash=signature,
            snapshots=[CheckpointSnapshot.from_record(r) for r in records],
            head_snapshot_id=head,
            checkpoint_storage=self,
            pruned_snapshot_ids=pruned,
        )

    async def delete(self, checkpoint_id: str) -> None:
        """Forget the checkpoint; ``CheckpointNotFoundError`` if it was never committed."""
        with self._lock:
            self._get(checkpoint_id)
            del self._checkpoints[checkpoint_id]

    async def list_checkpoint_ids(self) -> list[str]:
        """The ids of every stored checkpoint, sorted."""
        with self._lock:
            return sorted(self._checkpoints)

    async def prune(self, checkpoint_id: str, *, keep: Iterable[str]) -> list[str]:
        """Drop snapshots off the lineages of ``keep`` and the head; return their ids."""
        with self._lock:
            stored = self._get(checkpoint_id)
            parents = {s: r.parent_snapshot_id for s, r in stored.records.items()}
            removed = unreachable(checkpoint_id, parents, head=stored.head, keep=keep)
            for snapshot_id in removed:
                del stored.records[snapshot_id]
            stored.pruned.update(removed)
            return removed

    async def verify(self, checkpoint_id: str | None = None) -> list[VerifyReport]:
        """Check every (or one) checkpoint's records: graph, head and every part decodable."""
        with self._lock:
            ids = sorted(self._checkpoints) if checkpoint_id is None else [checkpoint_id]
            stored = [(cid, self._get(cid)) for cid in ids]
            views = [(cid, s.head, list(s.records.values())) for cid, s in stored]
        return [check_records(cid, head, records) for cid, head, records in views]

    def _get(self, checkpoint_id: str) -> _Stored:
        stored = self._checkpoints.get(checkpoint_id)
        if stored is None:
            raise CheckpointNotFoundError(checkpoint_id)
        return stored
