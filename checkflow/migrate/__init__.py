"""The explicit, offline migration of the previous generation's (v1) file checkpoints.

``python -m checkflow migrate-v1 SOURCE_DIR --to STORAGE_URL`` (or ``migrate_v1()``) reads
the JSON files v1's ``FileCheckpointStorage`` wrote, unpickles their values only through a
restricted unpickler (builtin value types and the types named with ``--allow-type``), groups
them by lineage into v2 checkpoints and writes them with the state codec. No load path
imports this package, and this module must never be imported by one: v2 never reads v1 data
on its own.
"""

from checkflow.migrate._migrate import (
    MigratedCheckpoint,
    MigrationSummary,
    SkippedFile,
    migrate_v1,
)
from checkflow.migrate._unpickle import V1Object

__all__ = ["MigratedCheckpoint", "MigrationSummary", "SkippedFile", "V1Object", "migrate_v1"]
