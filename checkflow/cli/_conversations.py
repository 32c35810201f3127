"""``checkflow conversations ls|show|unlock|recover``, and the orphan checkpoints of a storage.

For an operator of a server that died or lost a head: see which conversations exist (by their
real id and principal, not the hashed session ids), what each is at and who holds it; clear a
dead server's lease; re-point a conversation at what storage still has; list and delete the
checkpoints nothing references any more. The work lives in ``checkflow.hosting``; this module
parses and prints, and must never write except through ``unlock``, ``recover`` and
``prune --orphans``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from checkflow.cli._output import pending, print_fields, print_json
from checkflow.cli._storage_url import Storages
from checkflow.errors import CheckpointNotFoundError, SnapshotNotFoundError
from checkflow.hosting import (
    HostedConversation,
    checkpoint_summary,
    find_orphan_checkpoints,
    hosted_conversation,
    list_hosted_conversations,
    recover_conversation,
    unlock_conversation,
)

__all__ = ["add_conversation_commands", "print_pruned_orphans", "prune_orphans",
           "run_conversations"]


def add_conversation_commands(
    commands: Any, add_storage: Any
) -> None:
    """The ``conversations`` subcommands; ``add_storage(parser)`` adds ``--storage``/``--json``."""
    conversations = commands.add_parser(
        "conversations", help="list, inspect, unlock and recover hosted conversations")
    actions = conversations.add_subparsers(dest="action", required=True)
    for name, text in [
        ("ls", "hosted conversations with their principal, head and lease"),
        ("show", "one conversation: head, status, pending requests, lease"),
        ("unlock", "clear the lease of a conversation whose server is gone"),
        ("recover", "continue a conversation from the head its storage has now"),
    ]:
        action = actions.add_parser(name, help=text, description=text)
        add_storage(action)
        if name == "ls":
            action.add_argument("--orphans", action="store_true",
                                help="list the host checkpoints no conversation references "
                                     "instead (see checkpoints prune --orphans)")
            action.add_argument("--deleted", action="store_true",
                                help="also the conversations deleted through the host (or "
                                     "whose first turn never committed), marked deleted")
            continue
        action.add_argument("conversation_id", metavar="ID")
        action.add_argument("--principal", default=None, metavar="P",
                            help="the principal the conversation belongs to (default: none)")
        if name == "unlock":
            action.add_argument("--force", action="store_true",
                                help="clear a lease that is still live (its server may still "
                                     "be running the conversation)")


def _lease_text(lease: dict[str, Any] | None) -> str:
    if lease is None:
        return "none"
    left = float(lease.get("expires_at", 0.0)) - time.time()
    state = f"expires in {left:.0f}s" if left > 0 else f"expired {-left:.0f}s ago"
    return f"{lease.get('owner')} ({state})"


def _ls_line(conversation: HostedConversation) -> str:
    principal = conversation.principal if conversation.principal is not None else "-"
    head = conversation.head_snapshot_id or "-"
    lease = "leased" if conversation.lease_is_live else (
        "stale lease" if conversation.lease is not None else "")
    return "  ".join(p for p in (conversation.conversation_id, f"principal={principal}",
                                 f"head={head}", lease,
                                 "deleted" if conversation.deleted else "") if p)


async def _show(stores: Storages, conversation: HostedConversation, as_json: bool) -> None:
    body: dict[str, Any] = conversation.to_dict()
    body["status"], body["pending_requests"] = None, []
    if conversation.deleted:
        body["status"] = "deleted"
    elif conversation.checkpoint_id is not None and conversation.head_snapshot_id is not None:
        try:
            checkpoint = await stores.checkpoint_storage.load(conversation.checkpoint_id)
            checkpoint.restart_from(conversation.head_snapshot_id)
        except (CheckpointNotFoundError, SnapshotNotFoundError) as exc:
            body["status"] = "lost"
            body["problem"] = str(exc)
        else:
            body["status"] = checkpoint_summary(checkpoint)["status"]
            body["storage_head_snapshot_id"] = checkpoint.persisted_head_snapshot_id
            body["pending_requests"] = pending(checkpoint)
    if as_json:
        print_json(body)
        return
    print_fields(body, ("conversation_id", "principal", "checkpoint_id", "head_snapshot_id",
                        "storage_head_snapshot_id", "status", "problem"),
                 {"lease": _lease_text(conversation.lease)})


async def run_conversations(args: argparse.Namespace, stores: Storages) -> int:
    """Run one ``conversations`` subcommand against ``stores``."""
    sessions = stores.session_store
    if args.action == "ls":
        if args.orphans:
            orphans = await find_orphan_checkpoints(sessions, stores.checkpoint_storage)
            print_json(orphans) if args.json else print("\n".join(orphans))
            return 0
        found = [c for c in await list_hosted_conversations(sessions)
                 if args.deleted or not c.deleted]
        if args.json:
            print_json([c.to_dict() for c in found])
        else:
            print("\n".join(_ls_line(c) for c in found))
        return 0
    if args.action == "unlock":
        cleared = await unlock_conversation(sessions, args.conversation_id,
                                            principal=args.principal, force=args.force)
        if args.json:
            print_json({"conversation_id": args.conversation_id, "cleared": cleared})
        else:
            print(f"cleared the lease of {cleared.get('owner')}" if cleared
                  else "no lease to clear")
        return 0
    if args.action == "recover":
        token = await recover_conversation(sessions, stores.checkpoint_storage,
                                           args.conversation_id, principal=args.principal)
        if args.json:
            print_json({"conversation_id": args.conversation_id, "resume_token": token})
        else:
            print(f"{args.conversation_id}: now at {token.snapshot_id} "
                  f"(checkpoint {token.checkpoint_id})")
        return 0
    conversation = await hosted_conversation(sessions, args.conversation_id,
                                             principal=args.principal)
    await _show(stores, conversation, args.json)
    return 0


async def prune_orphans(stores: Storages, *, dry_run: bool,
                        progress: Callable[[str, int, int], None] | None = None) -> list[str]:
    """``checkpoints prune --orphans``: delete (or with ``dry_run`` only find) the orphan
    checkpoints, and return them; ``progress`` is told of each checkpoint checked and each
    orphan deleted."""
    orphans = await find_orphan_checkpoints(stores.session_store, stores.checkpoint_storage,
                                            progress=progress)
    if dry_run:
        return orphans
    removed = []
    for done, checkpoint_id in enumerate(orphans):
        if progress is not None:
            progress("deleting orphans", done, len(orphans))
        try:
            await stores.checkpoint_storage.delete(checkpoint_id)
        except CheckpointNotFoundError:
            continue  # gone meanwhile
        removed.append(checkpoint_id)
    if progress is not None and orphans:
        progress("deleting orphans", len(orphans), len(orphans))
    return removed


def print_pruned_orphans(removed: list[str], *, dry_run: bool, as_json: bool) -> None:
    """What ``prune_orphans`` removed (or would), for people or as JSON."""
    if as_json:
        print_json({"removed" if not dry_run else "would_remove": removed})
    else:
        verb = "would remove" if dry_run else "removed"
        print(f"{verb} {len(removed)} orphan checkpoint(s)" + "".join(f"\n  {r}" for r in removed))
