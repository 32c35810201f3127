"""Reading a hosted workflow's conversations: their heads, checkpoints and turns.

``WorkflowHost`` runs turns; everything it answers without running one lives here: the
conversation at its head, its checkpoint for snapshot views, and its turns as recorded (the
lineage's, a running one's, a failed one's), read from the stores without moving or claiming
anything, so a read never disturbs a turn running on the same checkpoint. This module must
never write to a store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkflow.agents import CHECKPOINT_KEY, load_session_checkpoint
from checkflow.checkpoints import Checkpoint, CheckpointReference, CheckpointStorage
from checkflow.errors import CheckpointNotFoundError, ConversationNotFoundError
from checkflow.hosting._host_base import HostBase
from checkflow.hosting._keys import GENERATION_KEY, ConversationKey
from checkflow.hosting._lease import LEASE_KEY, lease_is_live
from checkflow.hosting._results import ConversationState, ResumeToken
from checkflow.hosting._turns import TurnRecord, lineage_turns, locate_turn
from checkflow.workflows import Workflow, inspect_snapshot

__all__ = ["WorkflowReader"]

_CHECKPOINT = CHECKPOINT_KEY
RECENT_LOADS = 64


class WorkflowReader(HostBase):
    """The reading half of ``WorkflowHost`` (its ``checkpoint_storage`` and ``workflow()``)."""

    checkpoint_storage: CheckpointStorage
    _recent: dict[str, tuple[str | None, Checkpoint]]
    """What ``turns`` just loaded, by session id, with the session version it read: a turn
    that follows at once on an unchanged session (nobody leased it in between, so nothing was
    committed to it) runs on it instead of loading it again."""

    async def workflow(self) -> Workflow:
        raise NotImplementedError

    def _remember(self, key: ConversationKey, version: str | None,
                  checkpoint: Checkpoint) -> None:
        recent = self._recent
        recent.pop(key.session_id, None)
        recent[key.session_id] = (version, checkpoint)
        while len(recent) > RECENT_LOADS:
            del recent[next(iter(recent))]  # the oldest: its turn never came

    async def _load(
        self, key: ConversationKey, state: Mapping[str, Any], version: str | None = None,
    ) -> tuple[Checkpoint | None, str | None]:
        """The referenced checkpoint at the last good head; ``(None, None)`` if it is gone.

        ``version``: the session version a lease read; what ``turns`` loaded at that same
        version is taken instead of loading again."""
        recent = None if version is None else self._recent.pop(key.session_id, None)
        loaded = recent[1] if recent is not None and recent[0] == version else None
        held = await load_session_checkpoint(
            state, self.checkpoint_storage, owner=f"conversation {key.conversation_id!r}",
            loaded=loaded)
        return (None, None) if held is None else (held.checkpoint, held.good_head)

    async def turns(self, conversation_id: str, *, principal: str | None = None
                    ) -> list[TurnRecord]:
        """The turns on the conversation's lineage, oldest first (what every protocol's view
        of the conversation is rendered from). ``ConversationNotFoundError`` if none.

        Reads the stored checkpoint as it is (also while a turn runs on it here)."""
        key = ConversationKey(principal, conversation_id)
        session = await self.session_store.get(key.session_id)
        checkpoint, good = (None, None) if session is None else await self._stored(
            key, session.state)
        if checkpoint is None or good is None:
            raise ConversationNotFoundError(conversation_id)
        assert session is not None
        self._remember(key, session.version, checkpoint)
        return lineage_turns(checkpoint, good, await self.workflow())

    async def _stored(self, key: ConversationKey, state: Mapping[str, Any]
                      ) -> tuple[Checkpoint | None, str | None]:
        """The stored checkpoint (every snapshot, not moved) and the conversation's good head;
        for a first turn still running, the checkpoint it is writing, with no good head."""
        ref = state.get(_CHECKPOINT)
        checkpoint_id = ref.checkpoint_id if isinstance(ref, CheckpointReference) else (
            key.checkpoint_id(int(state.get(GENERATION_KEY, 0))))
        try:
            checkpoint = await self.checkpoint_storage.load(checkpoint_id)
        except CheckpointNotFoundError:
            return None, None
        good = ref.head_snapshot_id if isinstance(ref, CheckpointReference) else None
        if good is not None and good not in {s.snapshot_id for s in checkpoint.snapshots}:
            good = None  # pruned or lost: nothing of the lineage to show
        return checkpoint, good

    async def _locate(self, key: ConversationKey, turn_id: str | None,
                      idempotency_key: str | None) -> tuple[TurnRecord | None,
                                                            Checkpoint | None]:
        """The turn's record and the checkpoint as stored (snapshots past the good head
        included: a running turn's), for ``find_turn`` and followers."""
        active = self._runs.get(key)
        if active is not None and active.mark is not None and (
                active.run_id == turn_id or (idempotency_key is not None
                                             and active.idempotency_key == idempotency_key)):
            return locate_turn({}, active.checkpoint, None, None, turn_id=active.run_id,
                               key=None, lease={"turn": active.mark},
                               lease_live=True), active.checkpoint
        session = await self.session_store.get(key.session_id)
        if session is None:
            return None, None
        state = session.state
        checkpoint, good = await self._stored(key, state)
        lease = state.get(LEASE_KEY)
        record = locate_turn(state, checkpoint, good, await self.workflow(), turn_id=turn_id,
                             key=idempotency_key, lease=lease, lease_live=lease_is_live(lease))
        return record, checkpoint

    async def _inspector(self) -> Workflow:
        return await self.workflow()

    async def get_conversation(
        self, conversation_id: str, *, principal: str | None = None
    ) -> ConversationState:
        """The conversation at its head: status, all outputs so far, pending requests, token.

        Raises ``ConversationNotFoundError`` for a conversation this principal does not have.
        """
        checkpoint, token = await self.get_checkpoint(conversation_id, principal=principal)
        workflow = await self.workflow()
        view = inspect_snapshot(checkpoint.get_snapshot(token.snapshot_id), workflow=workflow)
        return ConversationState(
            conversation_id, view.status, view.outputs, dict(view.pending_requests), token,
            checkpoint, storage_head_snapshot_id=checkpoint.persisted_head_snapshot_id)

    async def get_checkpoint(
        self, conversation_id: str, *, principal: str | None = None
    ) -> tuple[Checkpoint, ResumeToken]:
        """The conversation's checkpoint, freshly loaded for reading, and its last good head.

        Decodes no state (snapshot views use the inspection decode). The checkpoint's working
        head is the conversation's good head; storage's head
        (``persisted_head_snapshot_id``) may be ahead of it after a failed turn.
        Raises ``ConversationNotFoundError`` for a conversation this principal does not have.
        """
        key = ConversationKey(principal, conversation_id)
        session = await self.session_store.get(key.session_id)
        checkpoint, good_head = (None, None) if session is None else await self._load(
            key, session.state)
        if checkpoint is None or good_head is None:
            raise ConversationNotFoundError(conversation_id)
        return checkpoint, ResumeToken(checkpoint.checkpoint_id, good_head)

