"""The graph signature: a stable hash of a workflow's topology and types.

The description is canonical data (sorted, names only: executor ids, ``module.QualName`` of
classes and handler types, edge groups and their kinds) hashed with SHA-256, so the same
definition gives the same hash in every process. It must never include an ``id()``, a
default ``repr`` (addresses) or anything that varies per run. Executors contribute extra facts
through ``Executor.signature_extra()``, which is how a nested workflow's own signature enters
its parent's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from checkflow.workflows._edges import EdgeGroup
from checkflow.workflows._executor import ExecutorSpec

__all__ = ["graph_description", "signature_hash"]

_SIGNATURE_VERSION = 1


def graph_description(
    start_executor_id: str, specs: Mapping[str, ExecutorSpec], edge_groups: Iterable[EdgeGroup]
) -> dict[str, Any]:
    """The canonical, process-independent description the signature hashes."""
    return {
        "version": _SIGNATURE_VERSION,
        "start": start_executor_id,
        "executors": sorted((spec.describe() for spec in specs.values()), key=lambda d: d["id"]),
        "edge_groups": sorted((g.describe() for g in edge_groups), key=lambda d: d["id"]),
    }


def signature_hash(description: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the description's canonical JSON (keys sorted)."""
    return hashlib.sha256(msgspec.json.encode(description, order="sorted")).hexdigest()
