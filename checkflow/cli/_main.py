"""The checkflow command: serve a workflow, inspect checkpoints and conversations in a storage.

``python -m checkflow serve MODULE:ATTR ...`` runs the hosting app with uvicorn;
``python -m checkflow checkpoints ls|show|tree|pending|prune|export`` reads a storage without
the workflow's code (inspection decode) and prints for people, or JSON with ``--json``;
``python -m checkflow conversations ...`` is ``_conversations``. This module parses arguments
and prints; the work lives in ``checkflow.hosting``, and this module must never write to a
storage except through ``prune``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

from checkflow.checkpoints import Checkpoint
from checkflow.cli._conversations import add_conversation_commands, prune_orphans, run_conversations
from checkflow.cli._export import write_export
from checkflow.cli._mermaid import render_mermaid
from checkflow.cli._migrate import COMMAND as MIGRATE
from checkflow.cli._migrate import add_migrate_parser, run_migrate
from checkflow.cli._output import describe_request as _describe_request
from checkflow.cli._output import pending as _pending
from checkflow.cli._output import print_fields
from checkflow.cli._output import print_json as _print_json
from checkflow.cli._serve_options import ENVIRONMENT, add_serve_options, serve_options
from checkflow.cli._storage_url import COSMOS_SETTINGS, DEFAULT_STORAGE, Storages, open_storage
from checkflow.cli._tree import render_tree, subtree
from checkflow.cli._verify import describe, verify
from checkflow.errors import CheckflowError
from checkflow.hosting import (
    checkpoint_export,
    checkpoint_summary,
    conversation_head,
    snapshot_summary,
)

__all__ = ["main"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("checkflow")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _epilog() -> str:
    lines = ["environment (a flag wins over its variable):"]
    lines += [f"  {k:38}{v}" for k, v in ENVIRONMENT.items()]
    lines.append("--storage cosmos: reads")
    lines += [f"  {k:38}{v}" for k, v in COSMOS_SETTINGS.items()]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    default_storage = os.environ.get("CHECKFLOW_STORAGE") or DEFAULT_STORAGE
    storage_help = (f"memory:, file:PATH or cosmos: (default {default_storage}; the cosmos: "
                    "settings are listed by checkflow --help)")
    parser = argparse.ArgumentParser(
        prog="checkflow", description=__doc__.splitlines()[0], epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"checkflow {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    def add_storage(action: argparse.ArgumentParser) -> None:
        action.add_argument("--storage", default=default_storage, help=storage_help)
        action.add_argument("--json", action="store_true", help="print JSON for scripts")

    serve = commands.add_parser("serve", help="serve a workflow (or agent) over HTTP")
    serve.add_argument("target", metavar="MODULE:ATTR",
                       help="a Workflow, WorkflowBuilder, factory of one, or an Agent")
    serve.add_argument("--host", default=None,
                       help="default 127.0.0.1 (all interfaces, 0.0.0.0, with --foundry)")
    serve.add_argument("--port", type=int, default=None,
                       help="0 picks a free port (default 8000; $PORT or 8088 with --foundry)")
    serve.add_argument("--foundry", action="store_true",
                       help="the Foundry hosted-agent container contract: the Responses "
                            "routes and /readiness, x-agent-user-id as the principal when "
                            "there is no --authenticate, x-agent-session-id as the "
                            "conversation of a new response")
    serve.add_argument("--storage", default=default_storage, help=storage_help)
    serve.add_argument("--adapters", default=None,
                       help="comma-separated: native, adapter names or MODULE:ATTR "
                            "(default native)")
    serve.add_argument("--authenticate", metavar="MODULE:FUNC",
                       help="authenticate(request) -> principal | None")
    add_serve_options(serve)

    checkpoints = commands.add_parser("checkpoints", help="inspect checkpoints in a storage")
    actions = checkpoints.add_subparsers(dest="action", required=True)
    for name, text in [("ls", "list checkpoint ids"),
                       ("show", "head, status and pending requests of one checkpoint"),
                       ("tree", "the snapshot graph, branches and head marked"),
                       ("pending", "the pending requests at the head"),
                       ("prune", "delete snapshots not reachable from the head or --keep"),
                       ("export", "the checkpoint as JSON (with or without --json): each "
                                  "stored state part once by content id, snapshots naming "
                                  "their parts by id; --expand: every snapshot's whole state"),
                       ("verify", "read every record; report torn tails, corruption and "
                                  "leftovers (exit 1 when any is found)")]:
        action = actions.add_parser(name, help=text, description=text)
        add_storage(action)
        if name == "verify":
            action.add_argument("checkpoint_id", metavar="ID", nargs="?",
                                help="one checkpoint (default: every one)")
        elif name not in ("ls", "prune"):
            action.add_argument("checkpoint_id", metavar="ID")
        if name == "prune":
            action.add_argument("checkpoint_id", metavar="ID", nargs="?")
            action.add_argument("--keep", action="append", default=[], metavar="SNAPSHOT_ID",
                                help="a snapshot to keep with its ancestors (repeatable)")
            action.add_argument("--dry-run", action="store_true",
                                help="list what would be removed; remove nothing")
            action.add_argument("--orphans", action="store_true",
                                help="instead of one checkpoint's snapshots, delete the host "
                                     "checkpoints no conversation references (no ID)")
        if name == "export":
            action.add_argument("--expand", action="store_true",
                                help="print every snapshot with its whole state, each shared "
                                     "part repeated (the self-contained form; far larger)")
        if name == "tree":
            action.add_argument("--since", metavar="SNAPSHOT_ID",
                                help="draw only the subtree from this snapshot")
            action.add_argument("--limit", type=int, metavar="N",
                                help="draw at most N snapshots")
            action.add_argument("--mermaid", action="store_true",
                                help="print the graph as a Mermaid flowchart")
    add_conversation_commands(commands, add_storage)
    add_migrate_parser(commands)
    return parser


def _show(checkpoint: Checkpoint, as_json: bool) -> None:
    summary = checkpoint_summary(checkpoint)
    summary["pending_requests"] = _pending(checkpoint)
    if as_json:
        _print_json(summary)
        return
    print_fields(summary, ("checkpoint_id", "workflow_name", "graph_signature_hash",
                           "head_snapshot_id", "storage_head_snapshot_id", "status",
                           "snapshot_count"), {"tips": ", ".join(summary["tips"])})


def _tree(checkpoint: Checkpoint, as_json: bool, since: str | None = None,
          limit: int | None = None) -> None:
    if as_json:
        head = checkpoint.head_snapshot_id
        shown = checkpoint.snapshots if since is None else subtree(checkpoint, since)
        _print_json([snapshot_summary(s, head) for s in shown][:limit])
    else:
        print(render_tree(checkpoint, since=since, limit=limit))


def _pending_command(checkpoint: Checkpoint, as_json: bool) -> None:
    requests = _pending(checkpoint)
    if as_json:
        _print_json(requests)
    else:
        print("\n".join(_describe_request(r) for r in requests) or "no pending requests")


def _export(checkpoint: Checkpoint, expand: bool) -> None:
    """JSON either way: each part once, streamed (``cli._export``), or ``--expand``'s form."""
    if expand:
        _print_json(checkpoint_export(checkpoint))
    else:
        write_export(checkpoint, sys.stdout)


_ON_CHECKPOINT: dict[str, Any] = {"show": _show, "tree": _tree, "pending": _pending_command}


def _would_prune(checkpoint: Checkpoint, keep: Sequence[str]) -> list[str]:
    """What ``prune`` would remove: snapshots off the lineages of storage's head and ``keep``."""
    roots = [*keep, *filter(None, [checkpoint.persisted_head_snapshot_id])]
    alive = {s.snapshot_id for root in roots for s in checkpoint.ancestors(root)}
    return [s.snapshot_id for s in checkpoint.snapshots if s.snapshot_id not in alive]


async def _prune(args: argparse.Namespace, stores: Storages) -> int:
    if args.orphans:
        if args.checkpoint_id is not None or args.keep:
            raise ValueError("prune --orphans takes no ID and no --keep")
        return await prune_orphans(stores, dry_run=args.dry_run, as_json=args.json)
    if args.checkpoint_id is None:
        raise ValueError("prune needs a checkpoint ID (or --orphans)")
    storage = stores.checkpoint_storage
    if args.dry_run:
        removed = _would_prune(await storage.load(args.checkpoint_id), args.keep)
    else:
        removed = await storage.prune(args.checkpoint_id, keep=args.keep)
    verb = "would remove" if args.dry_run else "removed"
    if args.json:
        _print_json({verb.replace(" ", "_"): removed})
    else:
        print(f"{verb} {len(removed)} snapshot(s)" + "".join(f"\n  {r}" for r in removed))
    return 0


async def _checkpoints(args: argparse.Namespace) -> int:
    async with open_storage(args.storage, must_exist=True) as stores:
        storage = stores.checkpoint_storage
        if args.command == "conversations":
            return await run_conversations(args, stores)
        if args.action == "ls":
            ids = await storage.list_checkpoint_ids()
            if args.json:
                _print_json(ids)
            else:
                print("\n".join(ids))
        elif args.action == "prune":
            return await _prune(args, stores)
        elif args.action == "verify":
            reports = await verify(storage, args.checkpoint_id)
            if args.json:
                _print_json(reports)
            else:
                print("\n".join(describe(r) for r in reports) or "no checkpoints")
            return 0 if all(r["ok"] for r in reports) else 1
        elif args.action == "tree":
            checkpoint = await _hosted_view(stores, args.checkpoint_id)
            if args.mermaid:
                print(render_mermaid(checkpoint))
            else:
                _tree(checkpoint, args.json, args.since, args.limit)
        elif args.action == "export":
            _export(await _hosted_view(stores, args.checkpoint_id), args.expand)
        else:
            _ON_CHECKPOINT[args.action](await _hosted_view(stores, args.checkpoint_id),
                                        args.json)
    return 0


async def _hosted_view(stores: Storages, checkpoint_id: str) -> Checkpoint:
    """The checkpoint at its conversation's head (storage's is ahead after a failed turn)."""
    checkpoint = await stores.checkpoint_storage.load(checkpoint_id)
    hosted = await conversation_head(stores.session_store, checkpoint_id)
    if hosted is not None and hosted.head_snapshot_id != checkpoint.head_snapshot_id:
        checkpoint.restart_from(hosted.head_snapshot_id)
    return checkpoint


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m checkflow`` and the ``checkflow`` script."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            options = serve_options(args)
            try:
                from checkflow.cli._serve import run_serve  # needs uvicorn: only serve pays
            except ModuleNotFoundError as exc:
                if exc.name not in ("uvicorn", "starlette"):
                    raise
                raise ImportError(f"serve needs {exc.name}: pip install 'checkflow[hosting]'"
                                  ) from exc
            run_serve(args.target, options)
            return 0
        if args.command == MIGRATE:
            return asyncio.run(run_migrate(args))
        return asyncio.run(_checkpoints(args))
    except (CheckflowError, ValueError, ImportError) as exc:
        print(f"checkflow: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
