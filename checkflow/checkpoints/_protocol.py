"""The ``CheckpointStorage`` protocol every backend implements (memory, file, Cosmos DB).

This module only declares the seam; it must never hold an implementation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from checkflow.checkpoints._checkpoint import Checkpoint
    from checkflow.checkpoints._snapshot import CheckpointSnapshot, Format

__all__ = ["CheckpointStorage", "ExistenceCheck"]


@runtime_checkable
class CheckpointStorage(Protocol):
    """Where checkpoints persist: a snapshot and the new head always land together.

    ``format`` is the state encoding (``"json"`` or ``"msgpack"``) this storage prefers;
    ``Checkpoint.commit_snapshot()`` encodes new snapshots with it.
    """

    format: Format

    async def commit_snapshot(
        self,
        checkpoint: Checkpoint,
        snapshot: CheckpointSnapshot,
        *,
        expected_head_snapshot_id: str | None,
    ) -> None:
        """Persist ``snapshot`` and make it the head, atomically.

        Raises ``CheckpointConflictError`` (and persists nothing visible) when the persisted
        head is not ``expected_head_snapshot_id``.
        """
        ...

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Return the checkpoint attached to this storage; ``CheckpointNotFoundError`` if none.

        Only snapshots reachable from the committed head (and its retained branches) appear.
        """
        ...

    async def delete(self, checkpoint_id: str) -> None:
        """Remove the checkpoint and every snapshot; ``CheckpointNotFoundError`` if none."""
        ...

    async def list_checkpoint_ids(self) -> list[str]:
        """Every stored checkpoint id, as given (not as encoded on disk), sorted."""
        ...

    async def prune(self, checkpoint_id: str, *, keep: Iterable[str]) -> list[str]:
        """Delete every snapshot not reachable from ``keep`` or the head; return removed ids.

        The head, the kept snapshots and all their ancestors always survive.
        """
        ...


@runtime_checkable
class ExistenceCheck(Protocol):
    """A storage that can tell at once, without waiting on a network, whether it holds an id.

    ``Workflow.create_checkpoint(checkpoint_id=...)`` asks it, so an id already stored is
    refused (``CheckpointExistsError``) where it was chosen. Memory and file storages declare
    it; a remote one (Cosmos DB) need not: the first commit refuses the id all the same.
    """

    def checkpoint_exists(self, checkpoint_id: str) -> bool:
        """Whether a committed checkpoint with this id is stored now."""
        ...
