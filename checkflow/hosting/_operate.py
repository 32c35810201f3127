"""What an operator does to hosted conversations from outside any server: list, unlock, recover,
find orphans.

Everything here works on the stores alone (no workflow code): the CLI's ``conversations``
commands and ``checkpoints prune --orphans`` stand on it, and ``WorkflowHost.recover``
shares ``recover_conversation``. Writes go through the session store's version check, so a
server running meanwhile is never overwritten. This module must never run a workflow or
decode a snapshot's state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from checkflow.agents import CHECKPOINT_KEY, store_session_checkpoint
from checkflow.checkpoints import CheckpointReference, CheckpointStorage
from checkflow.errors import (
    CheckpointNotFoundError,
    ConversationBusyError,
    ConversationNotFoundError,
    SessionConflictError,
    SessionError,
)
from checkflow.hosting._keys import (
    AGENT_SESSION_KEY,
    CONVERSATION_KEY,
    GENERATION_KEY,
    ConversationKey,
)
from checkflow.hosting._lease import LEASE_KEY, LeaseManager, new_owner_id, owner_is_gone
from checkflow.hosting._results import ResumeToken
from checkflow.sessions import AgentSession, SessionStore

__all__ = [
    "HostedConversation",
    "find_orphan_checkpoints",
    "hosted_conversation",
    "list_hosted_conversations",
    "recover_conversation",
    "unlock_conversation",
]


@dataclass(frozen=True, slots=True)
class HostedConversation:
    """One hosted conversation as its session records it (ids are readable, not hashes)."""

    conversation_id: str
    principal: str | None
    session_id: str
    checkpoint_id: str | None
    head_snapshot_id: str | None
    lease: dict[str, Any] | None
    """The lease record (``owner``, ``expires_at``, ``host``, ``pid``) while one is recorded."""
    deleted: bool = False
    """The session holds nothing (no checkpoint, no agent session) and no lease: what a
    ``DELETE`` leaves (the identity and generation stay, so a new conversation of the same id
    gets a fresh checkpoint id), or a first turn that never committed. A host answers 404 for
    it and lists it nowhere."""
    generation: int = 0
    """How many checkpoints the conversation has started afresh (after a ``DELETE``)."""

    @property
    def first_turn_checkpoint_id(self) -> str | None:
        """While a first turn runs (no checkpoint referenced yet, a live lease): the
        checkpoint it is writing, readable as it goes; ``None`` otherwise."""
        if self.checkpoint_id is not None or not self.lease_is_live:
            return None
        return ConversationKey(self.principal, self.conversation_id).checkpoint_id(
            self.generation)

    @property
    def lease_is_live(self) -> bool:
        """Whether a server holds the conversation now (unexpired, owner not seen dead)."""
        return lease_is_live(self.lease)

    def to_dict(self) -> dict[str, Any]:
        """JSON-native, for ``--json``."""
        return {"conversation_id": self.conversation_id, "principal": self.principal,
                "session_id": self.session_id, "checkpoint_id": self.checkpoint_id,
                "head_snapshot_id": self.head_snapshot_id, "lease": self.lease,
                "lease_is_live": self.lease_is_live, "deleted": self.deleted}


def lease_is_live(lease: Any) -> bool:
    """Whether a lease record still holds its conversation (unexpired and its owner alive)."""
    return (isinstance(lease, dict) and float(lease.get("expires_at", 0.0)) > time.time()
            and not owner_is_gone(lease))


def _describe(session: AgentSession) -> HostedConversation | None:
    identity = session.state.get(CONVERSATION_KEY)
    if not isinstance(identity, dict):
        return None
    state = session.state
    ref = state.get(CHECKPOINT_KEY)
    lease = state.get(LEASE_KEY)
    return HostedConversation(
        str(identity.get("conversation_id")), identity.get("principal"), session.session_id,
        ref.checkpoint_id if isinstance(ref, CheckpointReference) else None,
        ref.head_snapshot_id if isinstance(ref, CheckpointReference) else None,
        dict(lease) if isinstance(lease, dict) else None,
        deleted=CHECKPOINT_KEY not in state and AGENT_SESSION_KEY not in state
        and lease is None, generation=int(state.get(GENERATION_KEY, 0)))


async def list_hosted_conversations(session_store: SessionStore) -> list[HostedConversation]:
    """Every hosted conversation in ``session_store`` (any principal), by principal and id.

    Reads every session: for operators, not a hot path. Sessions that cannot be read here
    are skipped.
    """
    found = []
    for session_id in await session_store.list_session_ids():
        if not ConversationKey.is_session_id(session_id):
            continue
        try:
            session = await session_store.get(session_id)
        except SessionError:
            continue
        described = None if session is None else _describe(session)
        if described is not None:
            found.append(described)
    return sorted(found, key=lambda c: (c.principal or "", c.conversation_id))


async def hosted_conversation(
    session_store: SessionStore, conversation_id: str, *, principal: str | None = None
) -> HostedConversation:
    """One conversation's record; ``ConversationNotFoundError`` if there is none."""
    session = await session_store.get(ConversationKey(principal, conversation_id).session_id)
    described = None if session is None else _describe(session)
    if described is None:
        raise ConversationNotFoundError(conversation_id)
    return described


async def unlock_conversation(
    session_store: SessionStore, conversation_id: str, *, principal: str | None = None,
    force: bool = False,
) -> dict[str, Any] | None:
    """Clear the conversation's lease; the lease cleared (``None`` if there was none).

    A live lease (unexpired, its owner not seen dead) is refused with
    ``ConversationBusyError`` naming the owner unless ``force``: forcing it while the owner
    still runs lets a second server run the conversation too, and the checkpoint storage's
    conflict check then fails one of them.
    """
    key = ConversationKey(principal, conversation_id)
    for _attempt in range(5):
        session = await session_store.get(key.session_id)
        if session is None or _describe(session) is None:
            raise ConversationNotFoundError(conversation_id)
        lease = session.state.get(LEASE_KEY)
        if not isinstance(lease, dict):
            return None
        if lease_is_live(lease) and not force:
            remaining = float(lease.get("expires_at", 0.0)) - time.time()
            raise ConversationBusyError(conversation_id, retry_after=max(1.0, remaining),
                                        owner=str(lease.get("owner")))
        session.state.pop(LEASE_KEY, None)
        try:
            await session_store.set(session, expected_version=session.version)
        except SessionConflictError:
            continue  # renewed or released meanwhile: look again
        return dict(lease)
    raise ConversationBusyError(conversation_id, retry_after=1.0)


async def recover_conversation(
    session_store: SessionStore, checkpoint_storage: CheckpointStorage, conversation_id: str,
    *, principal: str | None = None, leases: LeaseManager | None = None,
) -> ResumeToken:
    """Re-point the conversation at the head its checkpoint storage has now.

    For a conversation whose acknowledged head storage lost (a torn log): the conversation
    continues from what storage kept, and what was after it is gone for good. Takes the
    conversation's lease for the write, so it is refused with ``ConversationBusyError`` while
    a server holds it. Raises ``ConversationNotFoundError`` for an unknown conversation and
    ``CheckpointNotFoundError`` when storage has nothing of its checkpoint (delete the
    conversation instead).
    """
    manager = leases or LeaseManager(session_store, owner=new_owner_id(), lease_seconds=60.0)
    lease = await manager.acquire(ConversationKey(principal, conversation_id), create=False)
    try:
        ref = lease.session.state.get(CHECKPOINT_KEY)
        if not isinstance(ref, CheckpointReference):
            raise ConversationNotFoundError(conversation_id)
        checkpoint = await checkpoint_storage.load(ref.checkpoint_id)
        head = checkpoint.head_snapshot_id
        if head is None:
            raise CheckpointNotFoundError(ref.checkpoint_id)
    except BaseException:
        await lease.release()
        raise
    await lease.release(lambda state: store_session_checkpoint(state, checkpoint, head))
    return ResumeToken(checkpoint.checkpoint_id, head)


async def find_orphan_checkpoints(
    session_store: SessionStore, checkpoint_storage: CheckpointStorage,
    *, progress: Callable[[str, int, int], None] | None = None,
) -> list[str]:
    """Host checkpoints (``conversation-<digest>-g<n>``) nothing will ever load again.

    An orphan's conversation session is gone, or references another checkpoint (a later
    generation), and holds no live lease (a first turn still running has not referenced its
    checkpoint yet: never an orphan). Checkpoints no host named are never listed.
    ``progress(what, done, total)`` is told of each checkpoint looked at (a store of many
    conversations takes a while: one session read each).
    """
    orphans = []
    ids = await checkpoint_storage.list_checkpoint_ids()
    for done, checkpoint_id in enumerate(ids):
        if progress is not None:
            progress("checking checkpoints", done, len(ids))
        session_id = ConversationKey.session_id_of_checkpoint(checkpoint_id)
        if session_id is None:
            continue
        try:
            session = await session_store.get(session_id)
        except SessionError:
            continue  # unreadable: never guess that its checkpoint is unwanted
        if session is not None:
            ref = session.state.get(CHECKPOINT_KEY)
            if isinstance(ref, CheckpointReference) and ref.checkpoint_id == checkpoint_id:
                continue
            if lease_is_live(session.state.get(LEASE_KEY)):
                continue
        orphans.append(checkpoint_id)
    if progress is not None:
        progress("checking checkpoints", len(ids), len(ids))
    return sorted(orphans)
