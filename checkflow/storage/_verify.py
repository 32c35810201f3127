"""``VerifyReport``: what ``storage.verify()`` found in one checkpoint, and the shared checks.

Every backend reads all of a checkpoint's records and reports instead of raising: torn tails,
records that do not decode (or whose parts do not), a broken snapshot graph, and leftovers no
committed snapshot reaches. This module only checks records handed to it; it never reads a
backend and never repairs anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, SnapshotRecord
from checkflow.errors import CheckflowError

__all__ = ["VerifyReport", "check_records"]


@dataclass(frozen=True)
class VerifyReport:
    """One checkpoint's verification: ``ok`` when nothing at all was found.

    ``torn_tail_bytes``: bytes after the last complete record (a crashed write; dropped by the
    next commit). ``corrupt``: one description per damaged record or part, naming it.
    ``unreachable``: ids of leftover snapshots or parts that no committed snapshot reaches
    (an interrupted write or prune; harmless, removed by the next prune or compaction).
    """

    checkpoint_id: str
    torn_tail_bytes: int = 0
    corrupt: tuple[str, ...] = ()
    unreachable: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when there is no torn tail, no corruption and no leftover."""
        return not (self.torn_tail_bytes or self.corrupt or self.unreachable)


def check_records(
    checkpoint_id: str,
    head: str | None,
    records: Iterable[SnapshotRecord],
    *,
    source: str = "",
    torn_tail_bytes: int = 0,
    corrupt: Iterable[str] = (),
    unreachable: Iterable[str] = (),
) -> VerifyReport:
    """Decode every record and every part (inspection only: no registered type is built).

    Adds what it finds to the backend's own findings (``corrupt``, ``unreachable``).
    """
    problems = list(corrupt)
    snapshots: list[CheckpointSnapshot] = []
    for record in records:
        try:
            snapshot = CheckpointSnapshot.from_record(record, source=source)
            snapshot.verify()
        except CheckflowError as exc:
            problems.append(f"snapshot {record.snapshot_id!r}: {exc}")
            continue
        snapshots.append(snapshot)
    if not problems:
        try:
            Checkpoint(checkpoint_id, snapshots=snapshots, head_snapshot_id=head)
        except (CheckflowError, ValueError) as exc:
            problems.append(f"snapshot graph: {exc}")
    return VerifyReport(
        checkpoint_id,
        torn_tail_bytes=torn_tail_bytes,
        corrupt=tuple(problems),
        unreachable=tuple(unreachable),
    )
