"""The ``checkflow`` command: ``serve`` a workflow, inspect ``checkpoints`` in a storage.

``python -m checkflow serve MODULE:ATTR ...`` runs the hosting app with uvicorn;
``python -m checkflow checkpoints ls|show|tree|pending|prune|export`` reads a storage without
the workflow's code (inspection decode) and prints for people, or JSON with ``--json``.
This module parses arguments and prints; the work lives in ``checkflow.hosting``, and this
module must never write to a storage except through ``prune``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

import msgspec

from checkflow.checkpoints import Checkpoint
from checkflow.cli._logging import add_log_arguments, log_settings
from checkflow.cli._mermaid import render_mermaid
from checkflow.cli._migrate import COMMAND as MIGRATE
from checkflow.cli._migrate import add_migrate_parser, run_migrate
from checkflow.cli._storage_url import COSMOS_SETTINGS, DEFAULT_STORAGE, open_storage
from checkflow.cli._tree import render_tree
from checkflow.cli._verify import describe, verify
from checkflow.errors import CheckflowError
from checkflow.hosting import (
    checkpoint_export,
    checkpoint_summary,
    conversation_head,
    jsonable,
    snapshot_summary,
)
from checkflow.workflows import inspect_snapshot

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    cosmos = "; ".join(f"{k}: {v}" for k, v in COSMOS_SETTINGS.items())
    storage_help = (f"memory:, file:PATH or cosmos: (default {DEFAULT_STORAGE}); "
                    f"cosmos: reads {cosmos}")
    parser = argparse.ArgumentParser(prog="checkflow", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

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
    serve.add_argument("--public-url", metavar="URL",
                       help="the base URL clients reach this server at (the A2A agent card's "
                            "interface URLs; default: taken from each request's Host)")
    serve.add_argument("--storage", default=DEFAULT_STORAGE, help=storage_help)
    serve.add_argument("--adapters", default="native",
                       help="comma-separated: native, adapter names or MODULE:ATTR")
    serve.add_argument("--authenticate", metavar="MODULE:FUNC",
                       help="authenticate(request) -> principal | None")
    serve.add_argument("--otel", action="store_true",
                       help="trace and measure with OpenTelemetry, exporting over OTLP/HTTP "
                            "as the OTEL_* environment variables say (extra: otel)")
    add_log_arguments(serve)

    checkpoints = commands.add_parser("checkpoints", help="inspect checkpoints in a storage")
    actions = checkpoints.add_subparsers(dest="action", required=True)
    for name, text in [("ls", "list checkpoint ids"),
                       ("show", "head, status and pending requests of one checkpoint"),
                       ("tree", "the snapshot graph, branches and head marked"),
                       ("pending", "the pending requests at the head"),
                       ("prune", "delete snapshots not reachable from the head or --keep"),
                       ("export", "the whole checkpoint as JSON"),
                       ("verify", "read every record; report torn tails, corruption and "
                                  "leftovers (exit 1 when any is found)")]:
        action = actions.add_parser(name, help=text)
        action.add_argument("--storage", default=DEFAULT_STORAGE, help=storage_help)
        action.add_argument("--json", action="store_true", help="print JSON for scripts")
        if name == "verify":
            action.add_argument("checkpoint_id", metavar="ID", nargs="?",
                                help="one checkpoint (default: every one)")
        elif name != "ls":
            action.add_argument("checkpoint_id", metavar="ID")
        if name == "tree":
            action.add_argument("--mermaid", action="store_true",
                                help="print the graph as a Mermaid flowchart")
        if name == "prune":
            action.add_argument("--keep", action="append", default=[], metavar="SNAPSHOT_ID",
                                help="a snapshot to keep with its ancestors (repeatable)")
    add_migrate_parser(commands)
    return parser


def _print_json(value: Any) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(jsonable(value))).decode() + "\n")


def _pending(checkpoint: Checkpoint) -> list[Any]:
    head = checkpoint.head_snapshot
    if head is None:
        return []
    return [
        {"request_id": r.request_id, "source_executor_id": r.source_executor_id,
         "data": jsonable(r.data), "response_type": r.response_type_name}
        for r in inspect_snapshot(head).pending_requests.values()
    ]


def _show(checkpoint: Checkpoint, as_json: bool) -> None:
    summary = checkpoint_summary(checkpoint)
    summary["pending_requests"] = _pending(checkpoint)
    if as_json:
        _print_json(summary)
        return
    for key in ("checkpoint_id", "workflow_name", "graph_signature_hash", "head_snapshot_id",
                "storage_head_snapshot_id", "status", "snapshot_count"):
        if key in summary:
            print(f"{key + ':':26}{summary[key]}")
    print(f"{'tips:':26}{', '.join(summary['tips'])}")
    print(f"{'pending_requests:':26}{len(summary['pending_requests'])}")
    for request in summary["pending_requests"]:
        print(f"  - {_describe_request(request)}")


def _describe_request(request: Any) -> str:
    if not isinstance(request, dict):
        return repr(request)
    return (f"{request.get('request_id')}: {request.get('data')!r} "
            f"(from {request.get('source_executor_id')}, "
            f"answer type {request.get('response_type')})")


def _tree(checkpoint: Checkpoint, as_json: bool) -> None:
    if as_json:
        head = checkpoint.head_snapshot_id
        _print_json([snapshot_summary(s, head) for s in checkpoint.snapshots])
    else:
        print(render_tree(checkpoint))


def _pending_command(checkpoint: Checkpoint, as_json: bool) -> None:
    requests = _pending(checkpoint)
    if as_json:
        _print_json(requests)
    else:
        print("\n".join(_describe_request(r) for r in requests) or "no pending requests")


def _export(checkpoint: Checkpoint, as_json: bool) -> None:
    _print_json(checkpoint_export(checkpoint))  # export is JSON either way


_ON_CHECKPOINT = {"show": _show, "tree": _tree, "pending": _pending_command, "export": _export}


async def _checkpoints(args: argparse.Namespace) -> int:
    async with open_storage(args.storage) as stores:
        storage = stores.checkpoint_storage
        if args.action == "ls":
            ids = await storage.list_checkpoint_ids()
            if args.json:
                _print_json(ids)
            else:
                print("\n".join(ids))
        elif args.action == "verify":
            reports = await verify(storage, args.checkpoint_id)
            if args.json:
                _print_json(reports)
            else:
                print("\n".join(describe(r) for r in reports) or "no checkpoints")
            return 0 if all(r["ok"] for r in reports) else 1
        elif args.action == "prune":
            removed = await storage.prune(args.checkpoint_id, keep=args.keep)
            if args.json:
                _print_json({"removed": removed})
            else:
                print(f"removed {len(removed)} snapshot(s)" + "".join(f"\n  {r}" for r in removed))
        else:
            checkpoint = await storage.load(args.checkpoint_id)
            hosted = await conversation_head(stores.session_store, args.checkpoint_id)
            if hosted is not None and hosted.head_snapshot_id != checkpoint.head_snapshot_id:
                # the conversation's head is the truth (storage's is ahead after a failed turn)
                checkpoint.restart_from(hosted.head_snapshot_id)
            if args.action == "tree" and args.mermaid:
                print(render_mermaid(checkpoint))
            else:
                _ON_CHECKPOINT[args.action](checkpoint, args.json)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m checkflow`` and the ``checkflow`` script."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            from checkflow.cli._serve import serve  # needs uvicorn: only `serve` pays for it

            foundry = bool(args.foundry)
            host = args.host or ("0.0.0.0" if foundry else "127.0.0.1")
            port = args.port if args.port is not None else (
                int(os.environ.get("PORT", "8088")) if foundry else 8000)
            asyncio.run(serve(args.target, host=host, port=port, storage=args.storage,
                              adapters=[a.strip() for a in args.adapters.split(",") if a.strip()],
                              authenticate=args.authenticate, foundry=foundry,
                              public_url=args.public_url, logs=log_settings(args),
                              otel=args.otel))
            return 0
        if args.command == MIGRATE:
            return asyncio.run(run_migrate(args))
        return asyncio.run(_checkpoints(args))
    except (CheckflowError, ValueError, ImportError) as exc:
        print(f"checkflow: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
