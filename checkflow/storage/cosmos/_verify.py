"""``verify()`` for the Cosmos DB checkpoint storage: read every item of a partition, report.

Reports (never raises for, never repairs) snapshot items that do not parse or decode, a
broken snapshot graph, and leftovers: items of another epoch, snapshots past the manifest's
sequence number or recorded as pruned, and chunks no current snapshot names. This module only
reads; it must never write or delete an item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from checkflow.checkpoints import SnapshotRecord
from checkflow.errors import CheckflowError, CheckpointNotFoundError
from checkflow.storage._verify import VerifyReport, check_records
from checkflow.storage.cosmos._layout import (
    MANIFEST_ID,
    partition_key,
    pruned_ids,
    record_from_item,
)
from checkflow.storage.cosmos._sdk import query_partition

if TYPE_CHECKING:
    from checkflow.storage.cosmos._checkpoints import CosmosCheckpointStorage

__all__ = ["verify_checkpoint"]

_ALL_SQL: Final = "SELECT * FROM c WHERE c.pk = @pk AND c.kind != 'manifest'"


async def verify_checkpoint(storage: CosmosCheckpointStorage, checkpoint_id: str) -> VerifyReport:
    """The report for one checkpoint (``CheckpointNotFoundError`` without a manifest)."""
    pk = partition_key(checkpoint_id)
    try:
        manifest = await storage.read_manifest(checkpoint_id, pk)
    except CheckflowError as exc:
        return VerifyReport(checkpoint_id, corrupt=(str(exc),))
    if manifest is None:
        raise CheckpointNotFoundError(checkpoint_id)
    rows = await query_partition(storage.container, pk, _ALL_SQL)
    current = [row for row in rows if row.get("epoch") == manifest.epoch]
    pruned = pruned_ids(current)
    chunks = {row["id"]: row.get("data", "") for row in current if row.get("kind") == "chunk"}
    leftovers = [str(row["id"]) for row in rows if row.get("epoch") != manifest.epoch]
    records: list[SnapshotRecord] = []
    named: set[str] = set()
    problems: list[str] = []
    for row in current:
        if row.get("kind") != "snapshot":
            continue
        if row.get("snapshot_id") in pruned or int(row.get("seq") or 0) > manifest.seq:
            leftovers.append(str(row["id"]))
            continue
        named.update(row.get("chunks") or ())
        try:
            records.append(record_from_item(row, chunks, source=_source(storage, pk, row))[1])
        except CheckflowError as exc:
            problems.append(str(exc))
    leftovers += [name for name in chunks if name not in named]
    return check_records(
        checkpoint_id,
        manifest.head,
        records,
        source=_source(storage, pk, {"id": MANIFEST_ID}),
        corrupt=problems,
        unreachable=sorted(leftovers),
    )


def _source(storage: CosmosCheckpointStorage, pk: str, row: dict[str, Any]) -> str:
    return storage.source(pk, str(row.get("id")))
