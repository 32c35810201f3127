"""``Checkpoint``: the caller-owned snapshot graph of one workflow execution and its two heads.

``head_snapshot_id`` is the working head, where the next snapshot attaches (``restart_from``
moves it). The checkpoint also remembers the persisted head it last observed and passes THAT
to the storage as the expected head, so branching is never a conflict while another writer's
commit always is. ``commit_snapshot()`` is the only code that creates lineage, calls storage
and advances heads; this module never encodes anything itself beyond building snapshots.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from checkflow._aio import eager_future
from checkflow.checkpoints import _envelope
from checkflow.checkpoints._conflicts import explain_conflict
from checkflow.checkpoints._guard import check_not_in_use, is_active
from checkflow.checkpoints._snapshot import CheckpointSnapshot, Format
from checkflow.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointInUseError,
    CorruptCheckpointError,
    SnapshotNotFoundError,
    StateTooLargeError,
)

if TYPE_CHECKING:
    from checkflow.checkpoints._protocol import CheckpointStorage

__all__ = ["Checkpoint", "CheckpointReference"]


class CheckpointReference(msgspec.Struct, frozen=True):
    """A storage-backed checkpoint as kept in a session: its id and the head seen last.

    Hosts swap it for ``await storage.load(reference.checkpoint_id)`` before a run.
    """

    checkpoint_id: str
    head_snapshot_id: str | None = None


class Checkpoint:
    """One logical workflow execution: its snapshots (a small graph), head and storage.

    Storages build loaded checkpoints through this same constructor; ``head_snapshot_id`` is
    then the persisted head. ``checkpoint_storage`` is a runtime attachment, never serialized.
    Snapshots whose parent links form a cycle, point outside the checkpoint or repeat an id
    raise ``CorruptCheckpointError``. ``pruned_snapshot_ids`` is what the storage recorded as
    pruned (storages pass it; it is not serialized by ``to_bytes``).
    """

    def __init__(
        self,
        checkpoint_id: str | None = None,
        *,
        workflow_name: str = "",
        graph_signature_hash: str = "",
        snapshots: Iterable[CheckpointSnapshot] = (),
        head_snapshot_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        pruned_snapshot_ids: Iterable[str] = (),
    ) -> None:
        self.checkpoint_id = checkpoint_id if checkpoint_id is not None else uuid.uuid4().hex
        self.workflow_name = workflow_name
        self.graph_signature_hash = graph_signature_hash
        self._storage = checkpoint_storage
        self._pruned = frozenset(pruned_snapshot_ids)
        self.max_state_bytes: int | None = None
        """Refuse a commit whose encoded state is larger (runtime-only; hosts set it)."""
        self._turn_mark: dict[str, Any] | None = None
        self._turn_first: dict[str, Any] | None = None
        self._commit_lock = asyncio.Lock()
        self._restarts = 0  # bumped by restart_from: a commit landing later leaves the head be
        self._created_at = datetime.now(UTC)  # tells a conflict with an earlier run from a race
        self._set_graph(list(snapshots), head_snapshot_id)

    def _set_graph(self, snapshots: list[CheckpointSnapshot], head: str | None) -> None:
        by_id: dict[str, CheckpointSnapshot] = {}
        children: dict[str, list[str]] = {}
        for snapshot in snapshots:
            if snapshot.snapshot_id in by_id:
                raise CorruptCheckpointError(
                    f"checkpoint {self.checkpoint_id!r} holds snapshot "
                    f"{snapshot.snapshot_id!r} twice"
                )
            by_id[snapshot.snapshot_id] = snapshot
            children[snapshot.snapshot_id] = []
        for snapshot in snapshots:
            parent = snapshot.parent_snapshot_id
            if parent is not None:
                if parent not in by_id:
                    raise CorruptCheckpointError(
                        f"snapshot {snapshot.snapshot_id!r} names parent {parent!r}, "
                        "which is not among the checkpoint's snapshots"
                    )
                children[parent].append(snapshot.snapshot_id)
        _refuse_cycles(self.checkpoint_id, by_id)
        if head is None and by_id:
            raise ValueError("a checkpoint with snapshots needs a head_snapshot_id")
        if head is not None and head not in by_id:
            raise SnapshotNotFoundError(self.checkpoint_id, head)
        self._snapshots = by_id
        self._children = children
        self._head = head
        self._persisted_head = head

    # -- reading -------------------------------------------------------------------------

    @property
    def checkpoint_storage(self) -> CheckpointStorage | None:
        """The storage commits persist to (runtime-only; never part of ``to_bytes``)."""
        return self._storage

    @checkpoint_storage.setter
    def checkpoint_storage(self, storage: CheckpointStorage | None) -> None:
        if is_active(self):
            raise CheckpointInUseError(self.checkpoint_id, "re-attach")
        self._storage = storage

    @property
    def format(self) -> Format:
        """The encoding commits use: the storage's, or JSON without storage."""
        storage = self._storage
        return storage.format if storage is not None else "json"

    @property
    def snapshots(self) -> list[CheckpointSnapshot]:
        """Every retained snapshot in creation order (a new list; the snapshots are immutable)."""
        return list(self._snapshots.values())

    @property
    def pruned_snapshot_ids(self) -> frozenset[str]:
        """Ids of snapshots the storage's ``prune()`` removed (as of load or refresh).

        Lets a caller that remembers a head tell a pruned head (not a loss) from a lost one
        (``CheckpointLostError``). Storages record prunes; an unattached checkpoint has none.
        """
        return self._pruned

    @property
    def head_snapshot_id(self) -> str | None:
        """Where the next snapshot attaches and the next run resumes from."""
        return self._head

    @property
    def persisted_head_snapshot_id(self) -> str | None:
        """The storage's head as this object last observed it (load, commit or refresh)."""
        return self._persisted_head

    @property
    def head_snapshot(self) -> CheckpointSnapshot | None:
        """The snapshot at ``head_snapshot_id``, or ``None`` before the first commit."""
        return None if self._head is None else self._snapshots[self._head]

    def get_snapshot(self, snapshot_id: str) -> CheckpointSnapshot:
        """The snapshot with this id; ``SnapshotNotFoundError`` if the checkpoint has none."""
        try:
            return self._snapshots[snapshot_id]
        except KeyError:
            raise SnapshotNotFoundError(self.checkpoint_id, snapshot_id) from None

    def children(self, snapshot_id: str) -> list[CheckpointSnapshot]:
        """The snapshots whose parent is ``snapshot_id``, in creation order."""
        self.get_snapshot(snapshot_id)
        return [self._snapshots[c] for c in self._children[snapshot_id]]

    def ancestors(self, snapshot_id: str) -> list[CheckpointSnapshot]:
        """The lineage from ``snapshot_id`` itself up to its root, child first."""
        lineage = [self.get_snapshot(snapshot_id)]
        while (parent := lineage[-1].parent_snapshot_id) is not None:
            lineage.append(self._snapshots[parent])
        return lineage

    def tips(self) -> list[CheckpointSnapshot]:
        """Snapshots without children (the ends of all branches), in creation order."""
        return [self._snapshots[s] for s, kids in self._children.items() if not kids]

    # -- moving the head -----------------------------------------------------------------

    def restart_from(self, snapshot_id: str) -> None:
        """Make ``snapshot_id`` the working head; the next commit branches from it.

        Nothing is deleted, and nothing is persisted until that next commit. Called while a
        commit is in flight, the caller's choice wins: that commit still lands (it becomes the
        persisted head and a retained snapshot) but the working head stays ``snapshot_id``.
        """
        check_not_in_use(self, "restart")
        self.get_snapshot(snapshot_id)
        self._head = snapshot_id
        self._restarts += 1

    def mark_turn(self, mark: Mapping[str, Any] | None,
                  first: Mapping[str, Any] | None = None) -> None:
        """Stamp the next commits' metadata with ``"turn": mark`` (runtime-only; hosts set it).

        The next commit carries ``first`` (when given) instead, once: a hosted turn records
        its protocol's data with its first snapshot and only its identity with the rest, so
        what a protocol needs later is committed in the same atomic write as the snapshot.
        ``None`` stops stamping.
        """
        self._turn_mark = None if mark is None else dict(mark)
        self._turn_first = None if first is None else dict(first)

    async def commit_snapshot(
        self, *, state: Mapping[str, Any], metadata: Mapping[str, Any] | None = None
    ) -> CheckpointSnapshot:
        """Encode ``state`` as a child of the head, persist it with the new head, advance.

        ``state`` must have exactly the four buckets. Commits on one checkpoint are ordered.
        The storage call is shielded from cancellation and memory is updated by the shielded
        part, so memory and storage always agree; on a storage error nothing in memory
        changes and the error propagates as itself.
        """
        check_not_in_use(self, "commit to")
        storage = self._storage
        fmt = self.format
        if self._turn_mark is not None:
            mark, self._turn_first = self._turn_first or self._turn_mark, None
            metadata = {**(metadata or {}), "turn": mark}
        await self._commit_lock.acquire()
        try:
            snapshot = CheckpointSnapshot(
                state=state, parent_snapshot_id=self._head, metadata=metadata, format=fmt
            )
            self._check_size(snapshot)
        except BaseException:
            self._commit_lock.release()
            raise
        if storage is None:
            self._append(snapshot, self._restarts)
            self._commit_lock.release()
            return snapshot
        persist = self._persist(storage, snapshot, self._persisted_head, self._restarts)
        task = eager_future(persist)
        if task.done():  # a storage that commits without waiting (in memory)
            self._commit_lock.release()
            return task.result()
        # The task, not this caller, releases the lock: a cancelled caller must not let the
        # next commit start before this one's outcome is in memory.
        task.add_done_callback(_release(self._commit_lock))
        return await asyncio.shield(task)

    def _check_size(self, snapshot: CheckpointSnapshot) -> None:
        limit = self.max_state_bytes
        if limit is None:
            return
        size = sum([sum(map(len, parts.values())) for parts in snapshot.record.parts.values()])
        if size > limit:
            raise StateTooLargeError(self.checkpoint_id, size=size, limit=limit)

    async def _persist(
        self,
        storage: CheckpointStorage,
        snapshot: CheckpointSnapshot,
        expected: str | None,
        restarts: int,
    ) -> CheckpointSnapshot:
        try:
            await storage.commit_snapshot(self, snapshot, expected_head_snapshot_id=expected)
        except CheckpointConflictError as conflict:
            if type(conflict) is not CheckpointConflictError or (
                conflict.actual_head_snapshot_id == conflict.expected_head_snapshot_id
            ):  # already said precisely (a storage's own retry story, or an exists error)
                raise
            raise await explain_conflict(storage, conflict, created_at=self._created_at) \
                from conflict
        self._append(snapshot, restarts)
        return snapshot

    def _append(self, snapshot: CheckpointSnapshot, restarts: int) -> None:
        """Record a landed commit; the working head follows unless restart_from moved it since."""
        sid = snapshot.snapshot_id
        self._snapshots[sid] = snapshot
        self._children[sid] = []
        if snapshot.parent_snapshot_id is not None:
            self._children[snapshot.parent_snapshot_id].append(sid)
        self._persisted_head = sid
        if restarts == self._restarts:
            self._head = sid

    async def refresh(self) -> None:
        """Reload snapshots and both heads from the attached storage (e.g. after a conflict)."""
        check_not_in_use(self, "refresh")
        if self._storage is None:
            raise CheckpointError(
                f"checkpoint {self.checkpoint_id!r} has no storage attached; nothing to refresh"
            )
        async with self._commit_lock:
            loaded = await self._storage.load(self.checkpoint_id)
            self.workflow_name = loaded.workflow_name
            self.graph_signature_hash = loaded.graph_signature_hash
            self._set_graph(loaded.snapshots, loaded.persisted_head_snapshot_id)
            self._pruned = loaded.pruned_snapshot_ids

    # -- serialization -------------------------------------------------------------------

    def reference(self) -> CheckpointReference:
        """This checkpoint as a small reference (id and persisted head) for a session."""
        return CheckpointReference(self.checkpoint_id, self._persisted_head)

    def to_bytes(self, format: Format = "json") -> bytes:
        """The whole checkpoint (snapshots and working head) as a versioned envelope."""
        return _envelope.encode(
            checkpoint_id=self.checkpoint_id,
            workflow_name=self.workflow_name,
            graph_signature_hash=self.graph_signature_hash,
            head_snapshot_id=self._head,
            records=[s.record for s in self._snapshots.values()],
            format=format,
        )

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        format: Format = "json",
        *,
        checkpoint_storage: CheckpointStorage | None = None,
        source: str = "<bytes>",
    ) -> Checkpoint:
        """Rebuild a checkpoint from ``to_bytes()`` output, unattached unless a storage is given.

        Raises ``UnsupportedFormatVersionError`` for an unknown envelope kind or version and
        ``CorruptCheckpointError`` (naming ``source``) for malformed bytes, values nested past
        the codec's limit, or parent links that form a cycle or leave the checkpoint.
        """
        envelope, records = _envelope.decode(data, format=format, source=source)
        try:
            return cls(
                envelope.checkpoint_id,
                workflow_name=envelope.workflow_name,
                graph_signature_hash=envelope.graph_signature_hash,
                snapshots=[CheckpointSnapshot.from_record(r, source=source) for r in records],
                head_snapshot_id=envelope.head_snapshot_id,
                checkpoint_storage=checkpoint_storage,
            )
        except (ValueError, SnapshotNotFoundError, CorruptCheckpointError) as exc:
            raise CorruptCheckpointError(str(exc), source=source) from exc

    def __repr__(self) -> str:
        return (
            f"Checkpoint(checkpoint_id={self.checkpoint_id!r}, head_snapshot_id={self._head!r}, "
            f"snapshots={len(self._snapshots)})"
        )


def _refuse_cycles(checkpoint_id: str, by_id: Mapping[str, CheckpointSnapshot]) -> None:
    """Raise ``CorruptCheckpointError`` if following parent links ever revisits a snapshot.

    Every snapshot is walked at most once (iteratively): a walk stops at a snapshot already
    known to reach a root.
    """
    rooted: set[str] = set()
    for start in by_id:
        path: list[str] = []
        on_path: set[str] = set()
        current: str | None = start
        while current is not None and current not in rooted:
            if current in on_path:
                raise CorruptCheckpointError(
                    f"checkpoint {checkpoint_id!r}: the parent links of snapshot "
                    f"{current!r} form a cycle"
                )
            path.append(current)
            on_path.add(current)
            current = by_id[current].parent_snapshot_id
        rooted.update(path)


def _release(lock: asyncio.Lock) -> Any:
    def done(task: asyncio.Future[Any]) -> None:
        lock.release()
        if not task.cancelled():
            task.exception()  # retrieved: a cancelled caller must not leave it "never retrieved"

    return done
