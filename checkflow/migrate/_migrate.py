"""``migrate_v1``: read a v1 ``FileCheckpointStorage`` folder, write v2 checkpoints, summarize.

Every file is read and decoded, and every snapshot encoded with the state codec, before
anything is written, so a refused type or an unregistered one leaves the destination as it
was; ``dry_run`` stops there. Files that are not v1 checkpoints, and lineages whose previous
checkpoint is missing, are skipped with a reason. A lineage already in the destination is
skipped too, so a rerun is harmless. This module must never be imported by a load path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, CheckpointStorage
from checkflow.errors import CheckpointNotFoundError, MigrationError, StateError
from checkflow.migrate._convert import V1Checkpoint, to_v2_state
from checkflow.migrate._unpickle import decode_v1_value, parse_type_names

__all__ = ["MigratedCheckpoint", "MigrationSummary", "SkippedFile", "migrate_v1"]

_REQUIRED = ("checkpoint_id", "workflow_name", "graph_signature_hash")


@dataclass(frozen=True)
class SkippedFile:
    """A file the migration did not convert, and why."""

    file: str
    reason: str


@dataclass(frozen=True)
class MigratedCheckpoint:
    """One v2 checkpoint made from one v1 lineage (its root's id is the checkpoint id)."""

    checkpoint_id: str
    workflow_name: str
    snapshot_ids: list[str]
    head_snapshot_id: str
    status: str
    notes: list[str]


@dataclass
class MigrationSummary:
    """What a migration did (or, with ``dry_run``, would do)."""

    dry_run: bool
    checkpoints: list[MigratedCheckpoint] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)

    @property
    def snapshot_count(self) -> int:
        return sum(len(c.snapshot_ids) for c in self.checkpoints)


def _read(path: Path, allowed: frozenset[str]) -> V1Checkpoint | str:
    """The decoded checkpoint, or the reason the file is not one."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"not readable as JSON ({type(exc).__name__}: {exc})"
    if not isinstance(raw, dict) or any(not isinstance(raw.get(k), str) for k in _REQUIRED):
        return "not a v1 checkpoint (no checkpoint_id, workflow_name and graph_signature_hash)"
    file = path.name
    decoded = {k: decode_v1_value(raw.get(k) or {}, allowed=allowed, file=file)
               for k in ("state", "messages", "pending_request_info_events")}
    if not all(isinstance(v, dict) for v in decoded.values()):
        return "not a v1 checkpoint (state, messages or pending events are not mappings)"
    previous = raw.get("previous_checkpoint_id")
    return V1Checkpoint(
        file=file, checkpoint_id=raw["checkpoint_id"],
        previous_checkpoint_id=previous if isinstance(previous, str) else None,
        workflow_name=raw["workflow_name"], graph_signature_hash=raw["graph_signature_hash"],
        timestamp=str(raw.get("timestamp", "")), iteration_count=int(raw.get("iteration_count", 0)),
        state=decoded["state"], messages=decoded["messages"],
        pending_requests=decoded["pending_request_info_events"])


Progress = Callable[[str, int, int], None]
"""``progress(what, done, total)``: told of each file read and each snapshot written."""


def _read_folder(source: Path, allowed: frozenset[str], skipped: list[SkippedFile],
                 progress: Progress | None = None) -> list[V1Checkpoint]:
    if not source.is_dir():
        raise MigrationError(f"{source} is not a folder of v1 checkpoint files")
    found = []
    paths = sorted(source.glob("*.json"))
    for done, path in enumerate(paths):
        if progress is not None:
            progress("reading v1 files", done, len(paths))
        read = _read(path, allowed)
        if isinstance(read, str):
            skipped.append(SkippedFile(path.name, read))
        else:
            found.append(read)
    if progress is not None and paths:
        progress("reading v1 files", len(paths), len(paths))
    return found


def _lineages(found: list[V1Checkpoint], skipped: list[SkippedFile]) -> list[list[V1Checkpoint]]:
    """Group by root, parents before children (then oldest first); the last is the head."""
    by_id = {c.checkpoint_id: c for c in found}
    children: dict[str | None, list[V1Checkpoint]] = {}
    for c in found:
        parent = c.previous_checkpoint_id
        if parent is not None and parent not in by_id:
            skipped.append(SkippedFile(c.file, f"its previous checkpoint {parent!r} is missing"))
            continue
        children.setdefault(parent, []).append(c)
    groups = []
    for root in sorted(children.get(None, []), key=lambda c: (c.timestamp, c.checkpoint_id)):
        order, frontier = [], [root]
        while frontier:  # oldest first among everything whose parent is already placed
            frontier.sort(key=lambda c: (c.timestamp, c.iteration_count, c.checkpoint_id))
            current = frontier.pop(0)
            order.append(current)
            frontier.extend(children.get(current.checkpoint_id, []))
        groups.append(order)
    placed = {c.checkpoint_id for g in groups for c in g}
    reported = {s.file for s in skipped}
    for c in found:
        if c.checkpoint_id not in placed and c.file not in reported:
            skipped.append(SkippedFile(c.file, "its lineage does not reach a first checkpoint"))
    return groups


def _snapshots(group: list[V1Checkpoint], fmt: Any) -> list[CheckpointSnapshot]:
    snapshots = []
    for c in group:
        state, metadata = to_v2_state(c)
        try:
            snapshots.append(CheckpointSnapshot(
                state=state, metadata=metadata, format=fmt, snapshot_id=c.checkpoint_id,
                parent_snapshot_id=c.previous_checkpoint_id, timestamp=c.timestamp or None))
        except StateError as exc:
            raise MigrationError(
                f"{c.file}: cannot re-encode with the state codec: {exc}") from exc
    return snapshots


async def migrate_v1(
    source_dir: str | Path,
    storage: CheckpointStorage,
    *,
    allow_types: Iterable[str] = (),
    dry_run: bool = False,
    graph_signature_hash: str | None = None,
    progress: Progress | None = None,
) -> MigrationSummary:
    """Convert every v1 checkpoint file in ``source_dir`` into v2 checkpoints in ``storage``.

    ``allow_types`` (``module:QualName``) are the only non-builtin types unpickled; anything
    else raises ``V1TypeRefusedError`` naming the type and file, before anything is written.
    ``graph_signature_hash`` stamps the new checkpoints for the v2 workflow that will resume
    them (without it they keep v1's hash, which no v2 workflow has). ``progress(what, done,
    total)`` is told of each file read and each snapshot written (``checkflow migrate-v1``
    draws it).
    """
    allowed = parse_type_names(allow_types)
    summary = MigrationSummary(dry_run=dry_run)
    found = await asyncio.to_thread(_read_folder, Path(source_dir), allowed, summary.skipped,
                                    progress)
    plans = []
    for group in _lineages(found, summary.skipped):
        root = group[0]
        plans.append((root, group, _snapshots(group, storage.format)))
    total, handled = sum(len(p[2]) for p in plans), 0  # written or skipped
    for root, group, snapshots in plans:
        try:
            await storage.load(root.checkpoint_id)
        except CheckpointNotFoundError:
            pass
        else:
            summary.skipped.extend(
                SkippedFile(c.file, f"checkpoint {root.checkpoint_id!r} is already in the "
                                    "destination") for c in group)
            handled += len(snapshots)
            continue
        checkpoint = Checkpoint(root.checkpoint_id, workflow_name=root.workflow_name,
                                graph_signature_hash=graph_signature_hash
                                or root.graph_signature_hash)
        if not dry_run:
            previous = None
            for snapshot in snapshots:
                if progress is not None:
                    progress("writing snapshots", handled, total)
                await storage.commit_snapshot(checkpoint, snapshot,
                                              expected_head_snapshot_id=previous)
                previous = snapshot.snapshot_id
                handled += 1
        head = snapshots[-1]
        summary.checkpoints.append(MigratedCheckpoint(
            checkpoint_id=root.checkpoint_id, workflow_name=root.workflow_name,
            snapshot_ids=[s.snapshot_id for s in snapshots], head_snapshot_id=head.snapshot_id,
            status=str(head.metadata.get("status")),
            notes=[f"{c.file}: {n}" for c in group for n in c.notes]))
    if progress is not None and total and not dry_run:
        progress("writing snapshots", total, total)
    return summary
