"""``checkpoints verify``: read every record of one or every checkpoint and report damage.

Torn tails (a write a crash cut short), corrupt records and unreachable leftovers are listed
per checkpoint; the command exits 1 when anything is found, so a script or a health check can
act on it. This module must never repair or write anything.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from checkflow.checkpoints import CheckpointStorage

__all__ = ["describe", "verify"]


async def verify(storage: CheckpointStorage, checkpoint_id: str | None,
                 progress: Callable[[str, int, int], None] | None = None
                 ) -> list[dict[str, Any]]:
    """Every report, JSON-native (``ok`` per checkpoint).

    ``progress`` is handed to a storage whose ``verify`` takes one (the file, memory and Cosmos
    DB storages do); another storage verifies without it.
    """
    check = getattr(storage, "verify", None)
    if check is None:
        raise ValueError(f"{type(storage).__name__} cannot verify its checkpoints")
    if progress is not None and "progress" in inspect.signature(check).parameters:
        reports = await check(checkpoint_id, progress=progress)
    else:
        reports = await check(checkpoint_id)
    return [{"checkpoint_id": r.checkpoint_id, "ok": r.ok, "torn_tail_bytes": r.torn_tail_bytes,
             "corrupt": list(r.corrupt), "unreachable": list(r.unreachable)} for r in reports]


def describe(report: dict[str, Any]) -> str:
    """One checkpoint's report for people."""
    if report["ok"]:
        return f"{report['checkpoint_id']}: ok"
    lines = [f"{report['checkpoint_id']}: PROBLEMS"]
    if report["torn_tail_bytes"]:
        lines.append(f"  torn tail: {report['torn_tail_bytes']} bytes (a write a crash cut "
                     "short; the next commit drops it)")
    lines += [f"  corrupt: {c}" for c in report["corrupt"]]
    lines += [f"  unreachable: {u}" for u in report["unreachable"]]
    return "\n".join(lines)
