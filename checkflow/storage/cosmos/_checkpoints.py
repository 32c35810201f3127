"""``CosmosCheckpointStorage``: checkpoints in Azure Cosmos DB, one logical partition each.

A commit is ONE transactional batch in the checkpoint's partition: the ETag-conditional write
of the manifest first (so a stale head stops the batch before anything applies), then the
snapshot item. The database, not a process lock, decides who advances a head; the service
rolls the whole batch back when any operation fails. A state too big for one item is sliced
into chunk items written before the batch; they stay unreachable until the batch's snapshot
item names them, and ``prune()`` removes the ones no snapshot names.

This module must never import the workflow engine or the agents, never write a snapshot item
or the manifest's head outside that batch, and never read across partitions except to list ids.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, Final

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, Format, SnapshotRecord
from checkflow.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointNotFoundError,
    CommitOutcomeUnknownError,
    CorruptCheckpointError,
    SnapshotNotFoundError,
)
from checkflow.storage._graph import unreachable
from checkflow.storage._verify import VerifyReport
from checkflow.storage.cosmos._layout import (
    BATCH_BUDGET_BYTES,
    MANIFEST_ID,
    MAX_BATCH_OPERATIONS,
    Manifest,
    chunk_items,
    encode_parts,
    item_source,
    manifest_item,
    parse_manifest,
    partition_key,
    prune_items,
    pruned_ids,
    record_from_item,
    serialized_size,
    snapshot_item,
    snapshot_item_id,
)
from checkflow.storage.cosmos._sdk import (
    ContainerProxy,
    CosmosBatchOperationError,
    CosmosHttpResponseError,
    CosmosResource,
    MatchConditions,
    delete_item_if_present,
    is_outcome_unknown,
    query_partition,
    read_item_or_none,
    status_of,
)

__all__ = ["CosmosCheckpointStorage"]

_ETAG_CACHE_SIZE: Final = 4096
_MAX_ATTEMPTS: Final = 5  # re-tries only when prune() touched the manifest, head unchanged
_PARALLEL_WRITES: Final = 8
_OPERATION_OVERHEAD: Final = 256  # bytes a batch adds around each operation's body
_MANIFEST_REJECTED: Final = frozenset({404, 409, 412})

_SNAPSHOTS_SQL: Final = (
    "SELECT * FROM c WHERE c.pk = @pk AND (c.kind = 'snapshot' OR c.kind = 'prune') "
    "AND c.epoch = @epoch"
)
_CHUNKS_SQL: Final = (
    "SELECT c.id, c.data FROM c WHERE c.pk = @pk AND c.kind = 'chunk' AND c.epoch = @epoch"
)
_INVENTORY_SQL: Final = (
    "SELECT c.id, c.kind, c.epoch, c.seq, c.snapshot_id, c.parent_snapshot_id, c.chunks, "
    "c.snapshot_ids FROM c WHERE c.pk = @pk "
    "AND (c.kind = 'snapshot' OR c.kind = 'chunk' OR c.kind = 'prune')"
)
_LIST_SQL: Final = "SELECT c.checkpoint_id FROM c WHERE c.kind = 'manifest'"


class CosmosCheckpointStorage(CosmosResource):
    """A ``CheckpointStorage`` on one Cosmos DB container partitioned by ``/pk``.

    Build it on a container you own (``CosmosCheckpointStorage(container)``) or let
    ``await CosmosCheckpointStorage.from_endpoint(...)`` connect and create what is missing.
    Any number of processes and hosts may share the container: commits are compare-and-swap
    on the manifest's ETag. ETags are cached per (checkpoint id, head snapshot id), so a stale
    ``Checkpoint`` object can never reuse the ETag another object's commit produced.
    """

    def __init__(self, container: ContainerProxy, *, format: Format = "json") -> None:
        super().__init__(container, format=format)
        self._manifests: OrderedDict[tuple[str, str], Manifest] = OrderedDict()

    # -- commit ------------------------------------------------------------------------------

    async def commit_snapshot(
        self,
        checkpoint: Checkpoint,
        snapshot: CheckpointSnapshot,
        *,
        expected_head_snapshot_id: str | None,
    ) -> None:
        """Persist ``snapshot`` and make it the head in one batch, if the head is expected.

        Raises ``CheckpointConflictError`` when the persisted head is not
        ``expected_head_snapshot_id``, ``CommitOutcomeUnknownError`` when the service could not
        say whether the batch landed; any other failure propagates. A failure never moves the
        persisted head or makes the snapshot visible.
        """
        cid, record = checkpoint.checkpoint_id, snapshot.record
        pk = partition_key(cid)
        expected = expected_head_snapshot_id
        for _ in range(_MAX_ATTEMPTS):
            base = await self._base_for_commit(cid, pk, expected)
            new = Manifest(
                cid,
                checkpoint.workflow_name,
                checkpoint.graph_signature_hash,
                record.snapshot_id,
                base.epoch if base else uuid.uuid4().hex,
                base.seq + 1 if base else 1,
            )
            body = manifest_item(pk, new)
            first: tuple[Any, ...] = (
                ("create", (body,))
                if base is None
                else ("replace", (MANIFEST_ID, body), {"if_match_etag": base.etag})
            )
            item = await self._stage_snapshot(pk, record, body, epoch=new.epoch, seq=new.seq)
            try:
                results = await self._execute_batch(pk, [first, ("create", (item,))])
            except CosmosBatchOperationError as exc:
                if exc.error_index != 0 or _operation_status(exc) not in _MANIFEST_REJECTED:
                    raise
                if await self._landed_despite_rejection(cid, pk, expected, record.snapshot_id):
                    return
                continue  # prune() touched the manifest, head unchanged: retry on the new ETag
            except Exception as exc:
                if not is_outcome_unknown(exc):
                    raise
                await self._resolve_unknown_outcome(cid, pk, record.snapshot_id, exc)
                return
            etag = _result_etag(results[0])
            if etag is not None:  # without one the next commit simply reads the manifest
                self._remember(new._replace(etag=etag))
            return
        raise _still_at_head(cid, expected, "a commit")

    async def _base_for_commit(self, cid: str, pk: str, expected: str | None) -> Manifest | None:
        """The manifest the commit replaces (``None``: first commit creates it)."""
        if expected is None:
            return None
        cached = self._manifests.get((cid, expected))
        if cached is not None:
            return cached
        manifest = await self._read_manifest(cid, pk)
        actual = manifest.head if manifest is not None else None
        if manifest is None or actual != expected:
            raise CheckpointConflictError(
                cid, expected_head_snapshot_id=expected, actual_head_snapshot_id=actual
            )
        self._remember(manifest)
        return manifest

    async def _stage_snapshot(
        self, pk: str, record: SnapshotRecord, manifest_body: Any, *, epoch: str, seq: int
    ) -> dict[str, Any]:
        """The snapshot item for the batch; writes chunk items first when it would not fit."""
        parts = encode_parts(record)
        inline = snapshot_item(pk, record, epoch=epoch, seq=seq, parts=parts)
        if _batch_size([manifest_body, inline]) <= BATCH_BUDGET_BYTES:
            return inline
        chunks = chunk_items(pk, parts, snapshot_id=record.snapshot_id, epoch=epoch)
        await self._parallel(self.container.create_item(chunk) for chunk in chunks)
        return snapshot_item(
            pk, record, epoch=epoch, seq=seq, parts=None, chunks=[c["id"] for c in chunks]
        )

    async def _execute_batch(self, pk: str, operations: list[tuple[Any, ...]]) -> list[Any]:
        bodies = [arg for op in operations for arg in op[1] if isinstance(arg, dict)]
        size = _batch_size(bodies)
        if len(operations) > MAX_BATCH_OPERATIONS or size > BATCH_BUDGET_BYTES:
            raise CheckpointError(
                f"partition {pk!r}: a batch of {len(operations)} operations and {size} bytes "
                f"exceeds the limits ({MAX_BATCH_OPERATIONS} operations, "
                f"{BATCH_BUDGET_BYTES} bytes); is the snapshot's metadata that large?"
            )
        return list(await self.container.execute_item_batch(operations, partition_key=pk))

    async def _landed_despite_rejection(
        self, cid: str, pk: str, expected: str | None, candidate: str
    ) -> bool:
        """After the manifest write was refused: did our write land (an SDK retry), or retry?

        Raises ``CheckpointConflictError`` naming the actual head when another writer moved it.
        """
        if expected is not None:
            self._manifests.pop((cid, expected), None)
        manifest = await self._read_manifest(cid, pk)
        actual = manifest.head if manifest is not None else None
        if manifest is not None and actual == candidate:
            self._remember(manifest)
            return True
        if manifest is not None and actual == expected:
            self._remember(manifest)
            return False
        raise CheckpointConflictError(
            cid, expected_head_snapshot_id=expected, actual_head_snapshot_id=actual
        )

    async def _resolve_unknown_outcome(
        self, cid: str, pk: str, candidate: str, cause: Exception
    ) -> None:
        """Re-read the manifest: the candidate is head -> committed, else outcome unknown."""
        try:
            manifest = await self._read_manifest(cid, pk)
        except Exception as exc:
            raise CommitOutcomeUnknownError(
                cid, candidate, f"{cause!r}; re-reading the manifest failed too: {exc!r}"
            ) from cause
        if manifest is not None and manifest.head == candidate:
            self._remember(manifest)
            return
        raise CommitOutcomeUnknownError(cid, candidate, repr(cause)) from cause

    # -- reading -----------------------------------------------------------------------------

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint as its committed manifest reaches it, attached to this storage.

        Raises ``CheckpointNotFoundError`` without a manifest and ``CorruptCheckpointError``
        naming the item when the head snapshot (or any snapshot it needs) is missing or bad.
        """
        pk = partition_key(checkpoint_id)
        manifest = await self._read_manifest(checkpoint_id, pk)
        if manifest is None:
            raise CheckpointNotFoundError(checkpoint_id)
        rows = await query_partition(self.container, pk, _SNAPSHOTS_SQL, epoch=manifest.epoch)
        pruned = pruned_ids(rows)
        items = [
            row for row in rows
            if row.get("kind") == "snapshot" and row.get("snapshot_id") not in pruned
        ]
        chunks: dict[str, str] = {}
        if any(item.get("chunks") for item in items):
            rows = await query_partition(self.container, pk, _CHUNKS_SQL, epoch=manifest.epoch)
            chunks = {row["id"]: row["data"] for row in rows}
        ordered: list[tuple[int, CheckpointSnapshot]] = []
        for item in items:
            source = self._source(pk, str(item.get("id")))
            seq, record = record_from_item(item, chunks, source=source)
            if seq <= manifest.seq:  # a later seq cannot exist; never expose one if it does
                ordered.append((seq, CheckpointSnapshot.from_record(record, source=source)))
        ordered.sort(key=lambda pair: pair[0])
        snapshots = [snapshot for _, snapshot in ordered]
        if manifest.head not in {s.snapshot_id for s in snapshots}:
            raise CorruptCheckpointError(
                f"the manifest names head snapshot {manifest.head!r}, but its item is missing",
                source=self._source(pk, snapshot_item_id(manifest.head or "")),
            )
        try:
            checkpoint = Checkpoint(
                checkpoint_id,
                workflow_name=manifest.workflow_name,
                graph_signature_hash=manifest.graph_signature_hash,
                snapshots=snapshots,
                head_snapshot_id=manifest.head,
                checkpoint_storage=self,
                pruned_snapshot_ids=pruned,
            )
        except (ValueError, SnapshotNotFoundError, CorruptCheckpointError) as exc:
            raise CorruptCheckpointError(str(exc), source=self._source(pk, MANIFEST_ID)) from exc
        self._remember(manifest)
        return checkpoint

    async def verify(self, checkpoint_id: str | None = None, *,
                     progress: Callable[[str, int, int], None] | None = None
                     ) -> list[VerifyReport]:
        """Read every item of every (or one) checkpoint; report what is wrong, change nothing.

        ``CheckpointNotFoundError`` for an unknown ``checkpoint_id``. ``progress(what, done,
        total)`` is told of each checkpoint read.
        """
        from checkflow.storage.cosmos._verify import verify_checkpoint

        ids = await self.list_checkpoint_ids() if checkpoint_id is None else [checkpoint_id]
        reports = []
        for done, cid in enumerate(ids):
            if progress is not None:
                progress("verifying checkpoints", done, len(ids))
            reports.append(await verify_checkpoint(self, cid))
        if progress is not None and ids:
            progress("verifying checkpoints", len(ids), len(ids))
        return reports

    async def read_manifest(self, cid: str, pk: str) -> Manifest | None:
        """The manifest item of ``cid`` (``None`` when there is none); for ``verify``."""
        return await self._read_manifest(cid, pk)

    def source(self, pk: str, item_id: str) -> str:
        """Where an item lives, for error messages and reports."""
        return self._source(pk, item_id)

    async def list_checkpoint_ids(self) -> list[str]:
        """Every checkpoint id with a manifest in the container, sorted (cross-partition)."""
        rows = [row async for row in self.container.query_items(_LIST_SQL)]
        return sorted(row["checkpoint_id"] for row in rows if "checkpoint_id" in row)

    async def _read_manifest(self, cid: str, pk: str) -> Manifest | None:
        item = await read_item_or_none(self.container, MANIFEST_ID, pk)
        if item is None:
            return None
        source = self._source(pk, MANIFEST_ID)
        manifest = parse_manifest(item, source=source)
        if manifest.checkpoint_id != cid:
            raise CorruptCheckpointError(
                f"manifest belongs to checkpoint {manifest.checkpoint_id!r}, not {cid!r}",
                source=source,
            )
        return manifest

    # -- removing ----------------------------------------------------------------------------

    async def delete(self, checkpoint_id: str) -> None:
        """Remove the manifest first (the checkpoint is gone from then on), then its items.

        Also removes what an earlier, interrupted ``delete()`` of this id left behind: items
        of any epoch that a snapshot item proves once had a manifest and that no manifest
        names now. Raises ``CheckpointNotFoundError`` without a manifest (after that cleanup).
        Chunks of a first commit that never landed are left for ``prune()``: they may belong
        to a commit still in flight.
        """
        pk = partition_key(checkpoint_id)
        manifest = await self._read_manifest(checkpoint_id, pk)
        deleted = False
        if manifest is not None:
            deleted = await delete_item_if_present(self.container, MANIFEST_ID, pk)
            for key in [key for key in self._manifests if key[0] == checkpoint_id]:
                del self._manifests[key]
        rows = await query_partition(self.container, pk, _INVENTORY_SQL)
        live = await self._read_manifest(checkpoint_id, pk)  # a re-creation meanwhile stays
        dead = {row.get("epoch") for row in rows if row.get("kind") == "snapshot"}
        if manifest is not None:
            dead.add(manifest.epoch)
        dead.discard(live.epoch if live is not None else None)
        await self._delete_items(pk, [row["id"] for row in rows if row.get("epoch") in dead])
        if not deleted:
            raise CheckpointNotFoundError(checkpoint_id)

    async def prune(self, checkpoint_id: str, *, keep: Iterable[str]) -> list[str]:
        """Delete snapshots off the lineages of ``keep`` and the head, and unnamed chunks.

        Returns the removed snapshot ids in commit order. Before deleting chunks it touches
        the manifest (an ETag-conditional replace), so a commit that wrote its chunks earlier
        can no longer land naming them: it retries with fresh chunks instead.
        """
        keep = list(keep)
        pk = partition_key(checkpoint_id)
        heads: list[str | None] = []
        for _ in range(_MAX_ATTEMPTS):
            manifest = await self._read_manifest(checkpoint_id, pk)
            if manifest is None:
                raise CheckpointNotFoundError(checkpoint_id)
            heads.append(manifest.head)
            rows = await query_partition(self.container, pk, _INVENTORY_SQL)
            removed, doomed_snapshots, doomed_chunks = _prune_plan(
                checkpoint_id, manifest, rows, keep
            )
            if doomed_chunks and not await self._touch(pk, manifest):
                continue  # a commit landed meanwhile: plan again
            # recorded before anything is deleted: a crash in between leaves only leftovers
            await self._parallel(
                self.container.create_item(item)
                for item in prune_items(pk, removed, epoch=manifest.epoch)
            )
            await self._delete_items(pk, doomed_snapshots)
            await self._delete_items(pk, doomed_chunks)
            return removed
        if heads[0] == heads[-1]:
            raise _still_at_head(checkpoint_id, heads[0], "prune()")
        raise CheckpointConflictError(  # commits kept landing while prune() planned
            checkpoint_id, expected_head_snapshot_id=heads[0], actual_head_snapshot_id=heads[-1]
        )

    async def _touch(self, pk: str, manifest: Manifest) -> bool:
        """Rewrite the manifest unchanged if its ETag is still ``manifest.etag``."""
        try:
            item = await self.container.replace_item(
                MANIFEST_ID,
                manifest_item(pk, manifest),
                etag=manifest.etag,
                match_condition=MatchConditions.IfNotModified,
            )
        except CosmosHttpResponseError as exc:
            if status_of(exc) in _MANIFEST_REJECTED:
                return False
            raise
        self._remember(manifest._replace(etag=item["_etag"]))
        return True

    async def _delete_items(self, pk: str, item_ids: list[str]) -> None:
        await self._parallel(
            delete_item_if_present(self.container, item_id, pk) for item_id in item_ids
        )

    # -- bounded parallelism, the ETag cache, error sources ----------------------------------

    async def _parallel(self, calls: Iterable[Any]) -> None:
        gate = asyncio.Semaphore(_PARALLEL_WRITES)

        async def gated(call: Any) -> None:
            async with gate:
                await call

        await asyncio.gather(*(gated(call) for call in calls))

    def _remember(self, manifest: Manifest) -> None:
        if manifest.head is None:
            return
        key = (manifest.checkpoint_id, manifest.head)
        self._manifests[key] = manifest
        self._manifests.move_to_end(key)
        while len(self._manifests) > _ETAG_CACHE_SIZE:
            self._manifests.popitem(last=False)

    def _source(self, pk: str, item_id: str) -> str:
        return item_source(str(getattr(self.container, "id", "?")), pk, item_id)

    def __repr__(self) -> str:
        return f"CosmosCheckpointStorage(container={getattr(self.container, 'id', '?')!r})"


def _prune_plan(
    checkpoint_id: str, manifest: Manifest, rows: list[dict[str, Any]], keep: list[str]
) -> tuple[list[str], list[str], list[str]]:
    """(removed snapshot ids, snapshot item ids to delete, chunk item ids to delete)."""
    earlier = pruned_ids([r for r in rows if r.get("epoch") == manifest.epoch])
    current = sorted(
        (
            r for r in rows
            if r.get("kind") == "snapshot" and r.get("epoch") == manifest.epoch
            and r.get("snapshot_id") not in earlier
        ),
        key=lambda r: int(r.get("seq", 0)),
    )
    parents = {r["snapshot_id"]: r.get("parent_snapshot_id") for r in current}
    removed = unreachable(checkpoint_id, parents, head=manifest.head, keep=keep)
    gone = set(removed)
    named = {c for r in current if r["snapshot_id"] not in gone for c in r.get("chunks") or ()}
    doomed_snapshots = [
        r["id"]
        for r in rows
        if (r.get("kind") == "snapshot"
            and (r.get("epoch") != manifest.epoch or r.get("snapshot_id") in gone | earlier))
        or (r.get("kind") == "prune" and r.get("epoch") != manifest.epoch)
    ]
    doomed_chunks = [r["id"] for r in rows if r.get("kind") == "chunk" and r["id"] not in named]
    return removed, doomed_snapshots, doomed_chunks


def _still_at_head(cid: str, head: str | None, what: str) -> CheckpointConflictError:
    """The conflict after ``_MAX_ATTEMPTS`` lost races on the manifest's ETag, said plainly.

    The head never moved: another writer kept rewriting the manifest unchanged (``prune()``
    touching it). Nothing was changed, and retrying is safe.
    """
    error = CheckpointConflictError(
        cid, expected_head_snapshot_id=head, actual_head_snapshot_id=head
    )
    error.args = (
        f"checkpoint {cid!r}: {what} gave up after {_MAX_ATTEMPTS} attempts because the "
        f"manifest kept being rewritten (a concurrent prune()?) while its head stayed "
        f"{head!r}; nothing was changed, retry",
    )
    return error


def _operation_status(exc: CosmosBatchOperationError) -> int | None:
    responses = exc.operation_responses or []
    index = exc.error_index
    if index is None or index >= len(responses):
        return status_of(exc)
    status = responses[index].get("statusCode")
    return status if isinstance(status, int) else None


def _result_etag(result: Any) -> str | None:
    etag = result.get("eTag") or (result.get("resourceBody") or {}).get("_etag")
    return etag if isinstance(etag, str) else None


def _batch_size(bodies: list[Any]) -> int:
    return sum(serialized_size(body) + _OPERATION_OVERHEAD for body in bodies)
