"""``checkflow checkpoints ls|show|tree|pending|prune|export|verify``: read a storage's checkpoints.

Inspection decodes state without the workflow's code and prints for people, or JSON with
``--json``. Every command taking an ``ID`` takes a conversation id as well (``_resolve``), and
``ls`` names the conversation referencing each checkpoint. This module parses and prints; it
must never write to a storage except through ``prune``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from checkflow.checkpoints import Checkpoint
from checkflow.cli._conversations import print_pruned_orphans, prune_orphans
from checkflow.cli._export import write_export
from checkflow.cli._mermaid import render_mermaid
from checkflow.cli._output import describe_request, pending, print_fields, print_json
from checkflow.cli._progress import progress_line
from checkflow.cli._resolve import RULE, Resolved, hosted_view, resolve
from checkflow.cli._storage_url import Storages
from checkflow.cli._tree import render_tree, subtree
from checkflow.cli._verify import describe, verify
from checkflow.hosting import (
    checkpoint_export,
    checkpoint_summary,
    conversation_head,
    snapshot_summary,
)

__all__ = ["add_checkpoint_commands", "run_checkpoints"]

_ACTIONS = [
    ("ls", "list checkpoint ids, each with the conversation (and its principal) that "
           "references it"),
    ("show", "head, status and pending requests of one checkpoint"),
    ("tree", "the snapshot graph, branches and head marked"),
    ("pending", "the pending requests at the head"),
    ("prune", "delete snapshots not reachable from the head, the conversation's head or "
              "--keep"),
    ("export", "the checkpoint as JSON (with or without --json): each stored state part once "
               "by content id, snapshots naming their parts by id; --expand: every "
               "snapshot's whole state"),
    ("verify", "read every record; report torn tails, corruption and leftovers (exit 1 when "
               "any is found)"),
]
_QUIET_HELP = "no progress line on stderr (it is drawn only when stderr is a terminal)"


def add_checkpoint_commands(commands: Any, add_storage: Callable[[argparse.ArgumentParser],
                                                                 None]) -> None:
    """The ``checkpoints`` subcommands; ``add_storage(parser)`` adds ``--storage``/``--json``."""
    checkpoints = commands.add_parser("checkpoints", help="inspect checkpoints in a storage")
    actions = checkpoints.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in _ACTIONS:
        takes_id = name != "ls"
        action = actions.add_parser(name, help=text, description=text,
                                    epilog=RULE if takes_id else None)
        add_storage(action)
        if name == "ls":
            action.add_argument("-l", "--long", action="store_true",
                                help="also the conversation's head; with --json, objects "
                                     "(checkpoint_id, conversation_id, principal, "
                                     "head_snapshot_id) instead of the ids alone")
            continue
        optional = name in ("verify", "prune")
        action.add_argument("checkpoint_id", metavar="ID", nargs="?" if optional else None,
                            help={"verify": "a checkpoint or conversation (default: every "
                                            "checkpoint)",
                                  "prune": "a checkpoint or conversation (none with "
                                           "--orphans)"}.get(name,
                                                             "a checkpoint or conversation"))
        action.add_argument("--principal", default=None, metavar="P",
                            help="ID is a conversation of principal P (default: a checkpoint "
                                 "id, else a conversation of no principal)")
        if name in ("prune", "export", "verify"):
            action.add_argument("-q", "--quiet", action="store_true", help=_QUIET_HELP)
        if name == "prune":
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


def _show(checkpoint: Checkpoint, args: argparse.Namespace) -> None:
    summary = checkpoint_summary(checkpoint)
    summary["pending_requests"] = pending(checkpoint)
    if args.json:
        print_json(summary)
        return
    print_fields(summary, ("checkpoint_id", "workflow_name", "graph_signature_hash",
                           "head_snapshot_id", "storage_head_snapshot_id", "status",
                           "snapshot_count"), {"tips": ", ".join(summary["tips"])})


def _tree(checkpoint: Checkpoint, args: argparse.Namespace) -> None:
    if args.mermaid:
        print(render_mermaid(checkpoint))
    elif args.json:
        head, since = checkpoint.head_snapshot_id, args.since
        shown = checkpoint.snapshots if since is None else subtree(checkpoint, since)
        print_json([snapshot_summary(s, head) for s in shown][:args.limit])
    else:
        print(render_tree(checkpoint, since=args.since, limit=args.limit))


def _pending(checkpoint: Checkpoint, args: argparse.Namespace) -> None:
    requests = pending(checkpoint)
    if args.json:
        print_json(requests)
    else:
        print("\n".join(describe_request(r) for r in requests) or "no pending requests")


def _export(checkpoint: Checkpoint, args: argparse.Namespace) -> None:
    """JSON either way: each part once, streamed (``cli._export``), or ``--expand``'s form."""
    if args.expand:
        print_json(checkpoint_export(checkpoint))
        return
    with progress_line(quiet=args.quiet, stdout_is_the_output=True) as progress:
        write_export(checkpoint, sys.stdout, progress if progress.shown else None)


_VIEWS: dict[str, Callable[[Checkpoint, argparse.Namespace], None]] = {
    "show": _show, "tree": _tree, "pending": _pending, "export": _export}


async def _ls(args: argparse.Namespace, stores: Storages) -> None:
    ids = await stores.checkpoint_storage.list_checkpoint_ids()
    if args.json and not args.long:
        print_json(ids)  # the form scripts have parsed from the start
        return
    held = [await conversation_head(stores.session_store, i) for i in ids]
    if args.json:
        print_json([{"checkpoint_id": i,
                     "conversation_id": None if h is None else h.conversation_id,
                     "principal": None if h is None else h.principal,
                     "head_snapshot_id": None if h is None else h.head_snapshot_id}
                    for i, h in zip(ids, held, strict=True)])
        return
    for checkpoint_id, conversation in zip(ids, held, strict=True):
        facts = [checkpoint_id]
        if conversation is not None:
            principal = conversation.principal
            facts += [f"conversation={conversation.conversation_id}",
                      f"principal={principal if principal is not None else '-'}"]
            if args.long:
                facts.append(f"head={conversation.head_snapshot_id}")
        print("  ".join(facts))


def _would_prune(checkpoint: Checkpoint, keep: Sequence[str]) -> list[str]:
    """What ``prune`` would remove: snapshots off the lineages of storage's head and ``keep``."""
    roots = [*keep, *filter(None, [checkpoint.persisted_head_snapshot_id])]
    alive = {s.snapshot_id for root in roots for s in checkpoint.ancestors(root)}
    return [s.snapshot_id for s in checkpoint.snapshots if s.snapshot_id not in alive]


async def _prune(args: argparse.Namespace, stores: Storages) -> int:
    if args.orphans:
        if args.checkpoint_id is not None or args.keep or args.principal is not None:
            raise ValueError("prune --orphans takes no ID, no --keep and no --principal")
        with progress_line(quiet=args.quiet) as progress:
            removed = await prune_orphans(stores, dry_run=args.dry_run,
                                          progress=progress if progress.shown else None)
        print_pruned_orphans(removed, dry_run=args.dry_run, as_json=args.json)
        return 0
    if args.checkpoint_id is None:
        raise ValueError("prune needs a checkpoint ID (or --orphans)")
    resolved = await resolve(stores, args.checkpoint_id, args.principal)
    # The conversation's head is kept too: after a failed turn on a branch, storage's head is
    # on another branch than the conversation's, and pruning from it alone would lose it.
    keep = [*args.keep, *([resolved.conversation.head_snapshot_id]
                          if resolved.conversation is not None else [])]
    storage = stores.checkpoint_storage
    if args.dry_run:
        removed = _would_prune(await storage.load(resolved.checkpoint_id), keep)
    else:
        removed = await storage.prune(resolved.checkpoint_id, keep=keep)
    verb = "would remove" if args.dry_run else "removed"
    if args.json:
        print_json({verb.replace(" ", "_"): removed})
    else:
        print(f"{verb} {len(removed)} snapshot(s)" + "".join(f"\n  {r}" for r in removed))
    return 0


async def _verify(args: argparse.Namespace, stores: Storages) -> int:
    checkpoint_id = args.checkpoint_id
    if checkpoint_id is not None:
        checkpoint_id = (await resolve(stores, checkpoint_id, args.principal)).checkpoint_id
    elif args.principal is not None:
        raise ValueError("verify --principal needs an ID (the conversation)")
    with progress_line(quiet=args.quiet) as progress:
        reports = await verify(stores.checkpoint_storage, checkpoint_id,
                               progress if progress.shown else None)
    if args.json:
        print_json(reports)
    else:
        print("\n".join(describe(r) for r in reports) or "no checkpoints")
    return 0 if all(r["ok"] for r in reports) else 1


async def run_checkpoints(args: argparse.Namespace, stores: Storages) -> int:
    """Run one ``checkpoints`` subcommand against ``stores``."""
    if args.action == "ls":
        await _ls(args, stores)
        return 0
    if args.action == "prune":
        return await _prune(args, stores)
    if args.action == "verify":
        return await _verify(args, stores)
    resolved: Resolved = await resolve(stores, args.checkpoint_id, args.principal)
    _VIEWS[args.action](await hosted_view(stores, resolved), args)
    return 0
