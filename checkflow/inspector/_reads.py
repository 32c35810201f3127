"""What the inspector shows, read from the stores: conversations, checkpoints, snapshots.

One reader serves both ways of running the inspector: beside a served workflow (its stores
and its definition, so requests carry their answers' schemas) and over a storage alone
(``checkflow inspect --storage``: no workflow code, unknown types shown opaque). Every read
goes through the hosting layer's operator functions and the codec's inspection decode, so
the page shows what ``checkflow conversations`` and ``checkpoints`` print. This module must
never write to a store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, CheckpointStorage
from checkflow.errors import (
    CheckflowError,
    CheckpointNotFoundError,
    ConversationNotFoundError,
    SnapshotNotFoundError,
)
from checkflow.hosting import (
    HostedConversation,
    TurnRecord,
    find_orphan_checkpoints,
    hosted_conversation,
    inspect_metadata,
    inspect_state,
    jsonable,
    lineage_turns,
    list_hosted_conversations,
    pending_view,
    snapshot_summary,
)
from checkflow.sessions import SessionStore
from checkflow.state import decode_for_inspection
from checkflow.workflows import RunStatus, SnapshotView, Workflow, inspect_snapshot

__all__ = ["ConversationRow", "InspectorReader", "lease_view"]

LOST = "lost"
"""The status of a conversation whose checkpoint or head storage no longer has."""


def lease_view(lease: dict[str, Any] | None, live: bool) -> dict[str, Any] | None:
    """The lease as the page shows it: who holds it, until when, and whether it still holds."""
    if lease is None:
        return None
    return {"owner": str(lease.get("owner")), "expires_at": float(lease.get("expires_at", 0)),
            "live": live}


@dataclass(frozen=True, slots=True)
class ConversationRow:
    """One line of the conversation list (``as_dict`` is its JSON)."""

    conversation: HostedConversation
    status: str | None
    updated_at: str | None
    snapshot_count: int
    protocol: str | None

    def as_dict(self) -> dict[str, Any]:
        c = self.conversation
        return {"conversation_id": c.conversation_id, "principal": c.principal,
                "status": self.status, "head_snapshot_id": c.head_snapshot_id,
                "updated_at": self.updated_at, "snapshot_count": self.snapshot_count,
                "protocol": self.protocol, "lease": lease_view(c.lease, c.lease_is_live)}


def _status(snapshot: CheckpointSnapshot) -> str | None:
    status = inspect_metadata(snapshot).get("status")
    return None if status is None else str(status).lower()


def _protocol(snapshot: CheckpointSnapshot) -> str | None:
    turn = inspect_metadata(snapshot).get("turn")
    return str(turn["protocol"]) if isinstance(turn, dict) and "protocol" in turn else None


def _turn_view(turn: TurnRecord) -> dict[str, Any]:
    return {"turn_id": turn.turn_id, "protocol": turn.protocol, "state": turn.state,
            "status": str(turn.status.value).lower(), "first_snapshot_id": turn.first_snapshot_id,
            "last_snapshot_id": turn.last_snapshot_id, "started_at": turn.started_at,
            "ended_at": turn.ended_at, "error": turn.error}


def _running_turn(conversation: HostedConversation) -> list[TurnRecord]:
    """The turn a live lease is running (none without one), for the turns table."""
    mark = conversation.lease.get("turn") if conversation.lease is not None else None
    if not conversation.lease_is_live or not isinstance(mark, dict) or "id" not in mark:
        return []
    return [TurnRecord(str(mark["id"]), mark.get("key"), str(mark.get("protocol", "native")),
                       {}, "running", RunStatus.RUNNING)]


def _pending(view: SnapshotView | None) -> list[dict[str, Any]]:
    """The requests pending at a snapshot, each with its answer's schema (``None`` when
    unknown here) and type name."""
    found = []
    for request in () if view is None else view.pending_requests.values():
        body = pending_view(request)
        body["response_type"] = request.response_type_name
        body["response_schema"] = body["response_schema"] or None
        found.append(body)
    return found


def _targets(parent: CheckpointSnapshot) -> list[str]:
    """The executors a superstep delivered to: the targets of its parent's pending messages
    (only that part of the parent is decoded)."""
    record = parent.record
    data = record.parts.get("messages", {}).get("pending")
    pending = None if data is None else jsonable(
        decode_for_inspection(data, format=record.format))
    messages = pending.get("messages", []) if isinstance(pending, dict) else []
    found: list[str] = []
    for message in messages if isinstance(messages, list) else []:
        target = message.get("target") if isinstance(message, dict) else None
        if isinstance(target, str) and target not in found:
            found.append(target)
    return found


@dataclass(frozen=True, slots=True)
class InspectorReader:
    """Reads for the inspector's pages from a session store and a checkpoint storage.

    ``workflow`` is the served definition (``None`` over a storage alone: schemas and the
    graph are then unknown). ``every_principal`` lists every principal's conversations (the
    operator's view of ``checkflow inspect``); otherwise a principal sees only its own.
    """

    session_store: SessionStore
    checkpoint_storage: CheckpointStorage
    workflow: Workflow | None = None
    every_principal: bool = False

    async def rows(self, principal: str | None) -> list[ConversationRow]:
        """The conversations ``principal`` may see, newest head first."""
        rows = []
        for conversation in await list_hosted_conversations(self.session_store):
            if conversation.deleted or (
                    not self.every_principal and conversation.principal != principal):
                continue
            rows.append(await self._row(conversation))
        rows.sort(key=lambda r: (r.updated_at or "", r.conversation.conversation_id),
                  reverse=True)
        return rows

    async def _row(self, conversation: HostedConversation) -> ConversationRow:
        first_turn = conversation.first_turn_checkpoint_id
        checkpoint_id = conversation.checkpoint_id or first_turn
        running = "running" if conversation.lease_is_live else None
        if checkpoint_id is None:
            return ConversationRow(conversation, running, None, 0, None)
        try:
            checkpoint = await self.checkpoint_storage.load(checkpoint_id)
            stored = checkpoint.persisted_head_snapshot_id
            head_id = conversation.head_snapshot_id or stored
            head = None if head_id is None else checkpoint.get_snapshot(head_id)
        except (CheckpointNotFoundError, SnapshotNotFoundError):
            # a first turn that has not committed its input yet, or a lost head
            return ConversationRow(conversation, running if first_turn else LOST, None, 0, None)
        if head is None:
            return ConversationRow(conversation, running, None, 0, None)
        latest = checkpoint.get_snapshot(stored) if stored is not None else head
        return ConversationRow(conversation, running or _status(head), latest.timestamp,
                               len(checkpoint.snapshots), _protocol(latest))

    async def conversation(self, conversation_id: str, principal: str | None
                           ) -> tuple[HostedConversation, Checkpoint, str | None]:
        """The conversation's record, its checkpoint as stored, and its good head (the
        resume point; ``None`` while a first turn runs or once storage lost it).

        ``ConversationNotFoundError`` when the principal has no such conversation, or its
        checkpoint is gone (``checkflow conversations show`` says why); a first turn still
        running is read from the checkpoint it writes, once it committed its input. Nothing
        is moved: a turn may be running on the same checkpoint."""
        conversation = await hosted_conversation(self.session_store, conversation_id,
                                                 principal=principal)
        checkpoint_id = conversation.checkpoint_id or conversation.first_turn_checkpoint_id
        if conversation.deleted or checkpoint_id is None:
            raise ConversationNotFoundError(conversation_id)
        try:
            checkpoint = await self.checkpoint_storage.load(checkpoint_id)
        except CheckpointNotFoundError:
            raise ConversationNotFoundError(conversation_id) from None
        good = conversation.head_snapshot_id
        if good not in {s.snapshot_id for s in checkpoint.snapshots}:
            good = None
        return conversation, checkpoint, good

    def _view(self, snapshot: CheckpointSnapshot) -> SnapshotView | None:
        """The engine's view of ``snapshot`` (``None`` for one that is no run state)."""
        try:
            return inspect_snapshot(snapshot, workflow=self.workflow)
        except CheckflowError:
            return None

    def detail(self, conversation: HostedConversation, checkpoint: Checkpoint,
               good: str | None) -> dict[str, Any]:
        """The conversation page's data: every snapshot's summary, the good head's requests
        and outputs, the turns on its lineage and the one a live lease runs."""
        head = None if good is None else checkpoint.get_snapshot(good)
        view = None if head is None else self._view(head)
        status = "running" if conversation.lease_is_live else (
            None if head is None else _status(head))
        return {
            "conversation_id": conversation.conversation_id,
            "principal": conversation.principal,
            "checkpoint_id": checkpoint.checkpoint_id,
            "workflow_name": checkpoint.workflow_name,
            "head_snapshot_id": good,
            "storage_head_snapshot_id": checkpoint.persisted_head_snapshot_id,
            "status": status,
            "lease": lease_view(conversation.lease, conversation.lease_is_live),
            "tips": [s.snapshot_id for s in checkpoint.tips()],
            "snapshots": [snapshot_summary(s, good) for s in checkpoint.snapshots],
            "pending_requests": _pending(view),
            "outputs": jsonable(list(view.outputs) if view is not None else []),
            "turns": [_turn_view(t) for t in (*lineage_turns(checkpoint, good, self.workflow),
                                              *_running_turn(conversation))],
            "resume_token": None if good is None else {
                "checkpoint_id": checkpoint.checkpoint_id, "snapshot_id": good},
        }

    def snapshot(self, checkpoint: Checkpoint, good: str | None, snapshot_id: str
                 ) -> dict[str, Any]:
        """One snapshot: its summary, its four buckets, the executors of its superstep and
        the requests pending at it (what a branch from it would answer)."""
        snapshot = checkpoint.get_snapshot(snapshot_id)
        body = snapshot_summary(snapshot, good)
        body["state"] = jsonable(inspect_state(snapshot))
        parent = snapshot.parent_snapshot_id
        ran = inspect_metadata(snapshot).get("boundary") == "superstep_completed"
        body["executors"] = _targets(checkpoint.get_snapshot(parent)) if (
            ran and parent is not None) else []
        body["pending_requests"] = _pending(self._view(snapshot))
        return body

    async def orphans(self) -> list[str]:
        """The checkpoints of the host no conversation references any more."""
        return await find_orphan_checkpoints(self.session_store, self.checkpoint_storage)
