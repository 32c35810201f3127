"""What the ``ID`` of a ``checkpoints`` command names: a checkpoint id, or a conversation id.

A host names each conversation's checkpoint after a hash (``conversation-<digest>-g<n>``), so
an operator holding the conversation id (``demo``) could not reach its checkpoint. The rule,
also printed by each command's ``--help`` (``RULE``): with ``--principal P``, ``ID`` is a
conversation of ``P``; without it, a checkpoint with that exact id wins, else the conversation
``ID`` of no principal; neither is ``UnknownCheckpointIdError`` naming what was tried. A
conversation stands for its checkpoint at the conversation's head (its last good turn; the
storage's own head may be ahead of it after a failed turn). This module must never write.
"""

from __future__ import annotations

from dataclasses import dataclass

from checkflow.checkpoints import Checkpoint, CheckpointStorage, ExistenceCheck
from checkflow.cli._storage_url import Storages
from checkflow.errors import (
    CheckpointError,
    CheckpointNotFoundError,
    ConversationNotFoundError,
    InvalidConversationIdError,
)
from checkflow.hosting import ConversationHead, conversation_head, hosted_conversation

__all__ = ["RULE", "Resolved", "UnknownCheckpointIdError", "hosted_view", "resolve"]

RULE = ("ID is a checkpoint id or a conversation id: with --principal P, the conversation ID "
        "of principal P; without it, the checkpoint ID if the storage has one, else the "
        "conversation ID of no principal. A conversation stands for its checkpoint at the "
        "conversation's head.")


class UnknownCheckpointIdError(CheckpointError, LookupError):
    """``ID`` names neither a checkpoint nor a conversation with a checkpoint in the storage.

    ``tried`` lists what was looked for, in order (``"checkpoint"``, ``"conversation"``).
    """

    def __init__(self, message: str, *, given: str, principal: str | None,
                 tried: tuple[str, ...]) -> None:
        super().__init__(message)
        self.given = given
        self.principal = principal
        self.tried = tried


@dataclass(frozen=True, slots=True)
class Resolved:
    """The checkpoint an ``ID`` names, and the conversation that references it (if any)."""

    checkpoint_id: str
    conversation: ConversationHead | None


def _of(principal: str | None) -> str:
    return "of no principal" if principal is None else f"of principal {principal!r}"


async def _has_checkpoint(storage: CheckpointStorage, checkpoint_id: str) -> bool:
    if isinstance(storage, ExistenceCheck):
        return storage.checkpoint_exists(checkpoint_id)
    return checkpoint_id in await storage.list_checkpoint_ids()  # a remote storage: one query


async def resolve(stores: Storages, given: str, principal: str | None) -> Resolved:
    """The checkpoint ``given`` names under the rule above."""
    tried: tuple[str, ...] = ("conversation",)
    if principal is None:
        if await _has_checkpoint(stores.checkpoint_storage, given):
            return Resolved(given, await conversation_head(stores.session_store, given))
        tried = ("checkpoint", "conversation")

    def unknown(message: str) -> UnknownCheckpointIdError:
        return UnknownCheckpointIdError(message, given=given, principal=principal, tried=tried)

    try:
        found = await hosted_conversation(stores.session_store, given, principal=principal)
    except (ConversationNotFoundError, InvalidConversationIdError):
        if principal is None:
            raise unknown(f"{given!r} is neither a checkpoint nor a conversation of no "
                          "principal in this storage (a principal's conversation needs "
                          "--principal)") from None
        raise unknown(f"{given!r} is not a conversation {_of(principal)} in this storage"
                      ) from None
    if found.checkpoint_id is None or found.head_snapshot_id is None:
        raise unknown(("" if principal is not None else f"{given!r} is not a checkpoint, and ")
                      + f"conversation {given!r} {_of(principal)} has no checkpoint (it was "
                      "deleted, or its first turn has not committed)")
    return Resolved(found.checkpoint_id, ConversationHead(
        found.conversation_id, found.principal, found.head_snapshot_id))


async def hosted_view(stores: Storages, resolved: Resolved) -> Checkpoint:
    """The resolved checkpoint, its working head moved to its conversation's head."""
    try:
        checkpoint = await stores.checkpoint_storage.load(resolved.checkpoint_id)
    except CheckpointNotFoundError:
        held = resolved.conversation
        if held is None:
            raise
        raise UnknownCheckpointIdError(
            f"conversation {held.conversation_id!r} {_of(held.principal)} references "
            f"checkpoint {resolved.checkpoint_id!r}, which this storage no longer has "
            "(delete the conversation to start it afresh)",
            given=held.conversation_id, principal=held.principal, tried=("checkpoint",)
        ) from None
    held = resolved.conversation
    if held is not None and held.head_snapshot_id != checkpoint.head_snapshot_id:
        checkpoint.restart_from(held.head_snapshot_id)
    return checkpoint
