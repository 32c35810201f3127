"""``checkflow migrate-v1``: the explicit, offline conversion of v1 file checkpoints.

This module parses the command's arguments and prints the summary; the work lives in
``checkflow.migrate``, imported only when the command runs. It must never run as part of
``serve`` or any load path.
"""

from __future__ import annotations

import argparse
import importlib
from typing import TYPE_CHECKING, Any

from checkflow.cli._progress import progress_line
from checkflow.cli._storage_url import SCHEMES, open_storage
from checkflow.workflows import Workflow, WorkflowBuilder

if TYPE_CHECKING:
    from checkflow.migrate import MigrationSummary

__all__ = ["add_migrate_parser", "run_migrate"]

COMMAND = "migrate-v1"


def add_migrate_parser(commands: Any) -> None:
    """Register ``migrate-v1`` on the top-level subcommands."""
    parser = commands.add_parser(
        COMMAND, help="convert v1 FileCheckpointStorage files into v2 checkpoints (offline)",
        description="convert v1 FileCheckpointStorage files into v2 checkpoints (offline)")
    parser.add_argument("source", metavar="SOURCE_DIR", help="the v1 checkpoint folder")
    parser.add_argument("--to", required=True, metavar="STORAGE_URL",
                        help=f"{SCHEMES} (where the v2 checkpoints go)")
    parser.add_argument("--allow-type", action="append", default=[], metavar="module:QualName",
                        help="a non-builtin type the v1 files may unpickle (repeatable)")
    parser.add_argument("--workflow", metavar="MODULE:ATTR",
                        help="the v2 Workflow (or WorkflowBuilder) that will resume these "
                             "checkpoints: they get its graph signature")
    parser.add_argument("--dry-run", action="store_true", help="read and convert, write nothing")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress line on stderr (it is drawn only when stderr is a "
                             "terminal)")


def _signature(target: str | None) -> str | None:
    if target is None:
        return None
    module, sep, attr = target.partition(":")
    if not sep:
        raise ValueError(f"--workflow {target!r}: expected MODULE:ATTR")
    found = getattr(importlib.import_module(module), attr)
    if isinstance(found, WorkflowBuilder):
        found = found.build()
    if not isinstance(found, Workflow):
        raise ValueError(f"--workflow {target!r} is a {type(found).__name__}, not a Workflow")
    return found.graph_signature_hash


def _print(summary: MigrationSummary) -> None:
    verb = "would migrate" if summary.dry_run else "migrated"
    print(f"{verb} {len(summary.checkpoints)} checkpoint(s), {summary.snapshot_count} "
          f"snapshot(s); skipped {len(summary.skipped)} file(s)")
    for c in summary.checkpoints:
        print(f"  {c.checkpoint_id} ({c.workflow_name}): {len(c.snapshot_ids)} snapshot(s), "
              f"head {c.head_snapshot_id}, {c.status}")
        for note in c.notes:
            print(f"    note: {note}")
    for s in summary.skipped:
        print(f"  skipped {s.file}: {s.reason}")


async def run_migrate(args: argparse.Namespace) -> int:
    """Run the command parsed by ``add_migrate_parser``."""
    from checkflow.migrate import migrate_v1  # only this command loads the migration

    signature = _signature(args.workflow)
    async with open_storage(args.to) as stores:
        with progress_line(quiet=args.quiet) as progress:
            summary = await migrate_v1(args.source, stores.checkpoint_storage,
                                       allow_types=args.allow_type, dry_run=args.dry_run,
                                       graph_signature_hash=signature,
                                       progress=progress if progress.shown else None)
    _print(summary)
    return 0
