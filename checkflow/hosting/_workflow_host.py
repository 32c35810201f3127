"""``WorkflowHost``: serve one workflow to many conversations, each with its own checkpoint.

Per conversation: claim it (busy set, then session lease), load the checkpoint its session
references (or create one attached to the host's storage), check the resume token, branch if
asked, run, and store the session back only once the run's outcome is known. The session
holds a ``CheckpointReference`` to the conversation's last good head (written and read by
``checkflow.agents``' session-checkpoint helpers, the same ones ``WorkflowAgent`` uses);
nothing else maps conversations to checkpoints. This module must never queue a request for a
busy conversation and never import the web framework.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Unpack, overload

import msgspec

from checkflow._random import random_hex
from checkflow.agents import (
    CHECKPOINT_KEY,
    ChatMessage,
    store_session_checkpoint,
)
from checkflow.checkpoints import (
    Checkpoint,
    CheckpointReference,
    CheckpointStorage,
)
from checkflow.errors import (
    CheckflowError,
    CheckpointNotFoundError,
    ConversationLimitError,
    ConversationNotFoundError,
    GraphSignatureMismatchError,
    InvalidMessageError,
    RecordTooLargeError,
    RequestNotPendingError,
    SnapshotNotFoundError,
    StaleResumeTokenError,
    TurnInProgressError,
)
from checkflow.hosting._convert import MessageConverter
from checkflow.hosting._keys import GENERATION_KEY, ConversationKey, running_conversation
from checkflow.hosting._lease import ConversationLease
from checkflow.hosting._operate import recover_conversation
from checkflow.hosting._protocol import HostDescription, RunOptions
from checkflow.hosting._records import DEFAULT_MAX_RECORD_BYTES
from checkflow.hosting._results import HostedRunResult, ResumeToken
from checkflow.hosting._target import Resolver
from checkflow.hosting._turn import HostedRunStream, ReplayedTurn, Turn
from checkflow.hosting._turns import (
    TurnOrigin,
    TurnRecord,
    answered_requests,
    iso_time,
    key_on_lineage,
    lineage_turns,
    record_outcome,
    turn_mark,
    turns_from,
)
from checkflow.hosting._workflow_reads import WorkflowReader
from checkflow.sessions import SessionStore
from checkflow.storage import InMemoryCheckpointStorage
from checkflow.workflows import (
    Interceptor,
    RunStatus,
    Workflow,
    WorkflowRunResult,
    pending_request_ids,
)

__all__ = ["HostedRunStream", "Turn", "WorkflowHost"]

SignatureMismatchPolicy = Literal["reject", "new_checkpoint"]
_CHECKPOINT = CHECKPOINT_KEY
_log = logging.getLogger("checkflow.hosting")


@dataclass(slots=True)
class Prepared:
    """A conversation claimed and ready to run: its lease, checkpoint and last good head,
    and the turn that will run (its id, idempotency key and the mark its snapshots carry)."""

    key: ConversationKey
    lease: ConversationLease
    checkpoint: Checkpoint
    generation: int
    good_head: str | None
    turn_id: str = ""
    idempotency_key: str | None = None
    mark: dict[str, Any] | None = None
    origin: TurnOrigin | None = None
    replay: bool = False  # the turn's idempotency key is on the lineage: nothing will run
    start_head: str | None = None  # the storage's head before the turn


class WorkflowHost(WorkflowReader):
    """Runs one workflow for many conversations; each conversation's session holds its checkpoint.

    ``target`` is a ``Workflow``, a ``WorkflowBuilder`` or a zero-argument factory (sync or
    async), resolved once. Sessions go to ``session_store`` and checkpoints to
    ``checkpoint_storage`` (both in memory by default). With
    ``on_signature_mismatch="new_checkpoint"`` a redeployed, changed workflow starts such
    conversations afresh (the old checkpoint is kept) instead of refusing them with
    ``GraphSignatureMismatchError``. ``interceptors`` wrap every run the host makes (see
    ``checkflow.workflows.Interceptor``); leases are described on ``HostBase``.

    Limits keep one conversation's cost bounded (``None`` turns one off): a new message to a
    conversation with ``max_pending_requests`` unanswered requests, and any run on a
    checkpoint holding ``max_snapshots`` snapshots, are refused with
    ``ConversationLimitError`` (HTTP 409 ``pending_requests_limit`` / ``snapshots_limit``)
    before anything runs: answer requests, or prune the checkpoint
    (``checkpoints prune`` removes every branch off the conversation's lineage), first; a
    commit whose encoded state exceeds ``max_state_bytes`` fails the turn with
    ``StateTooLargeError`` (HTTP 422 ``state_too_large``), committing nothing. A
    conversation whose own lineage reaches ``max_snapshots`` can only start afresh (delete
    it) or be given a higher limit: lineage is never rewritten. An adapter record
    (``records``) larger than ``max_record_bytes`` encoded is refused with
    ``RecordTooLargeError`` (HTTP 409 ``record_too_large``), writing nothing.
    """

    def __init__(
        self,
        target: Any,
        *,
        session_store: SessionStore | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        on_signature_mismatch: SignatureMismatchPolicy = "reject",
        lease_seconds: float = 300.0,
        renew_seconds: float | None = None,
        interceptors: Sequence[Interceptor] = (),
        max_pending_requests: int | None = 1_000,
        max_snapshots: int | None = 10_000,
        max_state_bytes: int | None = 16 * 1024 * 1024,
        max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
        cancel_poll_seconds: float = 1.0,
    ) -> None:
        if on_signature_mismatch not in ("reject", "new_checkpoint"):
            raise ValueError(
                "on_signature_mismatch must be 'reject' or 'new_checkpoint', "
                f"not {on_signature_mismatch!r}"
            )
        super().__init__(session_store, lease_seconds=lease_seconds, renew_seconds=renew_seconds,
                         cancel_poll_seconds=cancel_poll_seconds)
        self.checkpoint_storage: CheckpointStorage = (
            checkpoint_storage or InMemoryCheckpointStorage()
        )
        self.on_signature_mismatch = on_signature_mismatch
        self.interceptors: tuple[Interceptor, ...] = tuple(interceptors)
        self.max_pending_requests = max_pending_requests
        self.max_snapshots = max_snapshots
        self.max_state_bytes = max_state_bytes
        self.max_record_bytes = max_record_bytes
        self._workflow: Resolver[Workflow] = Resolver(
            target, is_instance=lambda t: isinstance(t, Workflow), what="Workflow"
        )
        self._converter: MessageConverter | None = None
        self._recent = {}

    async def workflow(self) -> Workflow:
        """The hosted workflow (resolved on first use)."""
        return await self._workflow.get()

    async def describe(self) -> HostDescription:
        """The workflow's name, the start executor's description and its input types."""
        workflow = await self.workflow()
        start = workflow.executors[workflow.start_executor_id]
        doc = (type(start).__doc__ or "").strip().split("\n\n")[0]
        return HostDescription(
            name=workflow.name,
            description=" ".join(doc.split()) or f"the {workflow.name} workflow",
            input_types=workflow.input_types,
            chat_input=workflow.accepts_input([ChatMessage("user", "")]),
            checkpoints=True,
        )

    async def convert_message(self, message: Any) -> Any:
        """``message`` as the first start-executor input type it fits, most specific first."""
        if self._converter is None:
            self._converter = MessageConverter((await self.workflow()).input_types)
        return self._converter.convert(message)

    # -- running -----------------------------------------------------------------------------

    @overload
    async def run(
        self, conversation_id: str, *, stream: Literal[False] = False,
        **options: Unpack[RunOptions],
    ) -> HostedRunResult: ...

    @overload
    async def run(
        self, conversation_id: str, *, stream: Literal[True], **options: Unpack[RunOptions]
    ) -> Turn | ReplayedTurn: ...

    async def run(
        self,
        conversation_id: str,
        *,
        message: Any = None,
        responses: Mapping[str, Any] | None = None,
        principal: str | None = None,
        from_snapshot: str | None = None,
        resume_token: ResumeToken | None = None,
        idempotency_key: str | None = None,
        origin: TurnOrigin | None = None,
        shared_state: Mapping[str, Any] | None = None,
        stream: bool = False,
    ) -> HostedRunResult | Turn | ReplayedTurn:
        """Run the conversation once: a ``HostedRunResult``, or (``stream``) its ``Turn``.

        A streamed turn is returned once the engine has accepted the input (its
        ``input_accepted`` snapshot is committed); a refusal is raised here instead. With an
        ``idempotency_key`` already recorded on the conversation's lineage nothing runs: the
        result (or a ``ReplayedTurn``) is the recorded outcome, ``replayed`` set; with one
        whose turn is still running, ``TurnInProgressError`` names it (follow it with
        ``follow``). ``origin`` (protocol and its small data) is committed with the turn's
        first snapshot, for ``turns``; so are the ``shared_state`` keys written with the
        input (a message or responses), so a cancel or a branch takes them back with it.

        Raises ``ConversationBusyError`` at once if the conversation is running (here or on
        another host), ``StaleResumeTokenError`` if ``resume_token`` no longer names the head,
        ``SnapshotNotFoundError`` for an unknown ``from_snapshot``, ``InvalidMessageError``
        for a message no start handler accepts, ``GraphSignatureMismatchError`` when the
        conversation's checkpoint belongs to another graph (policy ``"reject"``),
        ``RecordTooLargeError`` when ``origin.data`` is over ``max_record_bytes``. A workflow
        that fails is not an exception here: the result has status ``FAILED`` and ``error``.
        A run cancelled (``cancel``) has status ``CANCELLED``.
        """
        if message is not None and responses is not None:
            raise ValueError("give a message or responses, not both")
        workflow = await self.workflow()
        if message is not None:
            message = await self.convert_message(message)
        key = ConversationKey(principal, conversation_id)
        origin = origin or _NATIVE
        if idempotency_key is not None:
            active = self._runs.get(key)
            if active is not None and active.idempotency_key == idempotency_key:
                raise TurnInProgressError(conversation_id, active.run_id,
                                          idempotency_key=idempotency_key)
        turn_id = random_hex()
        mark, first = turn_mark(turn_id, idempotency_key, origin)
        if origin.data:
            self._check_origin(conversation_id, first)
        token = running_conversation.set(conversation_id)  # for this run's interceptors
        try:
            lease = await self._leases.acquire(key, turn=first)
        except BaseException:
            running_conversation.reset(token)
            raise
        try:
            prepared = await self._prepare(workflow, key, lease, from_snapshot, resume_token,
                                           idempotency_key)
            if prepared.replay:
                replay = self._replayed(workflow, prepared, idempotency_key or "")
                if replay is not None:
                    await lease.release()  # nothing ran, nothing changes
                    running_conversation.reset(token)
                    return replay if stream else await replay.get_result()
            if prepared.checkpoint.head_snapshot_id is None and message is None:
                raise InvalidMessageError(
                    f"conversation {conversation_id!r} has nothing to resume; send a message"
                )
            self._check_limits(prepared.checkpoint, conversation_id, message is not None)
            answered = answered_requests(prepared.checkpoint, responses or {})
            if answered:
                raise RequestNotPendingError(conversation_id, answered)
            prepared.turn_id, prepared.idempotency_key = turn_id, idempotency_key
            prepared.mark, prepared.origin = mark, origin
            prepared.checkpoint.mark_turn(mark, first)
            inner = workflow.run(
                message, checkpoint=prepared.checkpoint, stream=True,
                responses=None if responses is None else dict(responses),
                interceptors=self.interceptors, shared_state=shared_state)
        except BaseException:
            running_conversation.reset(token)
            await lease.release(discard=True)  # refused: nothing was committed
            raise
        turn = Turn(self, key, prepared, inner)
        if stream:
            try:
                await turn.accept()
            except BaseException:
                running_conversation.reset(token)
                raise
            return turn  # the caller's context keeps the conversation while it streams
        try:
            return await turn.get_result()  # it shields the run's end itself
        finally:
            running_conversation.reset(token)

    def _check_origin(self, conversation_id: str, first: dict[str, Any]) -> None:
        limit = self.max_record_bytes
        if limit is not None and (size := len(msgspec.json.encode(first))) > limit:
            raise RecordTooLargeError("turn", conversation_id, size=size, limit=limit)

    def _replayed(self, workflow: Workflow, prepared: Prepared, key: str
                  ) -> ReplayedTurn | None:
        """The recorded outcome of the turn of idempotency key ``key`` on the lineage."""
        checkpoint, good = prepared.checkpoint, prepared.good_head
        if good is None:
            return None
        record = next(t for t in reversed(lineage_turns(checkpoint, good, workflow))
                      if t.idempotency_key == key)
        result = HostedRunResult(
            prepared.key.conversation_id, record.status, outputs=list(record.outputs),
            pending_requests=dict(record.pending_requests),
            resume_token=ResumeToken(checkpoint.checkpoint_id, good), turn=record,
            replayed=True)
        return ReplayedTurn(result, record)

    def _check_limits(self, checkpoint: Checkpoint, conversation_id: str, new_input: bool
                      ) -> None:
        most = self.max_snapshots
        if most is not None and len(checkpoint.snapshots) >= most:
            raise ConversationLimitError(
                conversation_id, limit="snapshots", maximum=most,
                actual=len(checkpoint.snapshots),
                hint=f"prune checkpoint {checkpoint.checkpoint_id!r} to continue")
        most, head = self.max_pending_requests, checkpoint.head_snapshot
        if most is not None and new_input and head is not None:
            pending = len(pending_request_ids(head))
            if pending >= most:
                raise ConversationLimitError(
                    conversation_id, limit="pending_requests", maximum=most, actual=pending,
                    hint="answer pending requests before sending new input")

    async def _prepare(
        self,
        workflow: Workflow,
        key: ConversationKey,
        lease: ConversationLease,
        from_snapshot: str | None,
        resume_token: ResumeToken | None,
        idempotency_key: str | None = None,
    ) -> Prepared:
        state = lease.session.state
        generation = int(state.get(GENERATION_KEY, 0))
        checkpoint, good_head = await self._load(key, state, lease.read_version)
        if (idempotency_key is not None and checkpoint is not None and good_head is not None
                and key_on_lineage(checkpoint, good_head, idempotency_key)):
            # A retry of a committed turn: its recorded outcome stands, whatever the token.
            return Prepared(key, lease, checkpoint, generation, good_head, replay=True)
        if resume_token is not None:
            current = (checkpoint.checkpoint_id, good_head) if checkpoint is not None else None
            if current != (resume_token.checkpoint_id, resume_token.snapshot_id):
                raise StaleResumeTokenError(
                    expected={"checkpoint_id": resume_token.checkpoint_id,
                              "snapshot_id": resume_token.snapshot_id},
                    actual=None if current is None else
                    {"checkpoint_id": current[0], "snapshot_id": current[1]},
                )
        if checkpoint is None:
            generation += 1 if _CHECKPOINT in state else 0
        elif checkpoint.graph_signature_hash != workflow.graph_signature_hash:
            _log.warning(
                "conversation %r: checkpoint %s belongs to another graph (signature %s, the "
                "workflow's is %s); %s", key.conversation_id, checkpoint.checkpoint_id,
                checkpoint.graph_signature_hash, workflow.graph_signature_hash,
                "refused" if self.on_signature_mismatch == "reject" else "starting afresh")
            if self.on_signature_mismatch == "reject":
                raise GraphSignatureMismatchError(
                    expected=workflow.graph_signature_hash,
                    actual=checkpoint.graph_signature_hash,
                    checkpoint_id=checkpoint.checkpoint_id,
                )
            checkpoint, good_head, generation = None, None, generation + 1
        if checkpoint is None:
            if from_snapshot is not None:
                raise SnapshotNotFoundError(key.checkpoint_id(generation), from_snapshot)
            checkpoint, generation = await self._fresh_checkpoint(
                workflow, key, generation, after_crash=lease.took_over)
        elif from_snapshot is not None and from_snapshot != checkpoint.head_snapshot_id:
            checkpoint.restart_from(from_snapshot)
        checkpoint.max_state_bytes = self.max_state_bytes
        return Prepared(key, lease, checkpoint, generation, good_head,
                        start_head=checkpoint.persisted_head_snapshot_id)

    async def _fresh_checkpoint(
        self, workflow: Workflow, key: ConversationKey, generation: int, *, after_crash: bool
    ) -> tuple[Checkpoint, int]:
        """A new checkpoint for ``generation`` (attached to the host's storage).

        After a host died mid-run (its expired lease was taken over) a checkpoint it began may
        exist without a reference; then the next free generation is used. Otherwise the id is
        used as is: two hosts racing to create one conversation never both get here (its
        session is created create-only), and should anything else collide, the first commit
        fails the storage's conflict check, which reports the conversation busy.
        """
        checkpoint_id = key.checkpoint_id(generation)
        while after_crash:
            try:
                await self.checkpoint_storage.load(checkpoint_id)
            except CheckpointNotFoundError:
                break
            with contextlib.suppress(CheckflowError):  # the dead owner's unreferenced attempt
                await self.checkpoint_storage.delete(checkpoint_id)
            generation += 1
            checkpoint_id = key.checkpoint_id(generation)
        checkpoint = workflow.create_checkpoint(
            checkpoint_id=checkpoint_id, checkpoint_storage=self.checkpoint_storage
        )
        return checkpoint, generation

    async def _finish(
        self,
        prepared: Prepared,
        result: WorkflowRunResult | None,
        error: BaseException | None,
    ) -> HostedRunResult:
        """Store the session (new good head, or the old one and the turn's outcome after a
        failure) and end the lease: the turn's one session write."""
        checkpoint, key = prepared.checkpoint, prepared.key
        good_head = checkpoint.head_snapshot_id if error is None else prepared.good_head
        generation = prepared.generation
        checkpoint.mark_turn(None)
        if good_head is None and checkpoint.head_snapshot_id is not None:
            # A failed first run: the conversation stays fresh; its attempt is discarded.
            generation += 1
            with contextlib.suppress(CheckflowError):
                await self.checkpoint_storage.delete(checkpoint.checkpoint_id)
        failure = None if error is None else f"{type(error).__name__}: {error}"
        at = time.time()

        def update(state: dict[str, Any]) -> None:
            state[GENERATION_KEY] = max(int(state.get(GENERATION_KEY, 0)), generation)
            store_session_checkpoint(state, checkpoint, good_head)
            if failure is not None and prepared.mark is not None:
                record_outcome(state, _with_data(prepared), "failed", failure, at)

        await prepared.lease.release(update)
        if error is not None:
            _log_failure(prepared, error)
        token = None if good_head is None else ResumeToken(checkpoint.checkpoint_id, good_head)
        if result is None:
            return HostedRunResult(key.conversation_id, RunStatus.FAILED, resume_token=token,
                                   error=error, turn=self._failed_record(prepared, failure, at))
        status = RunStatus.FAILED if error is not None else result.status
        outputs = result.get_outputs()
        pending = dict(result.pending_requests)
        record = self._failed_record(prepared, failure, at) if error is not None else (
            self._committed_record(prepared, status, outputs, pending))
        return HostedRunResult(
            key.conversation_id, status, outputs=outputs, pending_requests=pending,
            resume_token=token, error=error, result=result, turn=record)

    def _committed_record(self, prepared: Prepared, status: RunStatus, outputs: list[Any],
                          pending: dict[str, Any]) -> TurnRecord:
        """This turn as ``turns`` will show it, from what the run already has."""
        checkpoint, origin = prepared.checkpoint, prepared.origin or _NATIVE
        last = checkpoint.head_snapshot_id
        first = last
        snapshot = None if last is None else checkpoint.get_snapshot(last)
        while snapshot is not None:
            mark = snapshot.metadata.get("turn")
            if not isinstance(mark, dict) or mark.get("id") != prepared.turn_id:
                break
            first = snapshot.snapshot_id
            parent = snapshot.parent_snapshot_id
            snapshot = None if parent is None else checkpoint.get_snapshot(parent)
        return TurnRecord(
            prepared.turn_id, prepared.idempotency_key, origin.protocol, dict(origin.data),
            "committed", status, first, last, outputs, pending,
            checkpoint_id=checkpoint.checkpoint_id,
            started_at=None if first is None else checkpoint.get_snapshot(first).timestamp,
            ended_at=None if last is None else checkpoint.get_snapshot(last).timestamp)

    def _failed_record(self, prepared: Prepared, failure: str | None, at: float,
                       state: Literal["failed", "cancelled"] = "failed") -> TurnRecord:
        """A turn that did not move the head, as ``find_turn`` will show its outcome."""
        origin = prepared.origin or _NATIVE
        return TurnRecord(prepared.turn_id, prepared.idempotency_key, origin.protocol,
                          dict(origin.data), state,
                          RunStatus.CANCELLED if state == "cancelled" else RunStatus.FAILED,
                          error=failure, on_lineage=False, ended_at=iso_time(at))

    async def _abandon(self, prepared: Prepared, error: BaseException | None = None
                       ) -> HostedRunResult:
        """End the lease after a run that did not finish (cancelled, conflict, storage error).

        The conversation keeps its good head and the session records the turn's outcome; an
        unfinished first run moves the generation on, so the next attempt never collides
        with whatever that run left in the storage. What it committed stays readable (its
        snapshots were announced to a client that may have gone away): an unfinished first
        turn's checkpoint is an orphan, listed by ``conversations ls --orphans`` and removed
        by ``checkpoints prune --orphans``.
        """
        bump = 1 if prepared.good_head is None else 0
        prepared.checkpoint.mark_turn(None)
        why = None if error is None else f"{type(error).__name__}: {error}"
        outcome: Literal["failed", "cancelled"] = "cancelled" if error is None else "failed"
        at = time.time()

        def update(state: dict[str, Any]) -> None:
            state[GENERATION_KEY] = max(int(state.get(GENERATION_KEY, 0)),
                                        prepared.generation + bump)
            if prepared.mark is not None:
                record_outcome(state, _with_data(prepared), outcome, why, at)

        await prepared.lease.release(update)
        good = prepared.good_head
        token = None if good is None else ResumeToken(prepared.checkpoint.checkpoint_id, good)
        return HostedRunResult(prepared.key.conversation_id, RunStatus.CANCELLED,
                               resume_token=token,
                               turn=self._failed_record(prepared, why, at, outcome))

    async def _refused(self, prepared: Prepared, error: BaseException) -> None:
        """The engine refused the turn's input (or it stopped) before accepting it."""
        checkpoint = prepared.checkpoint
        if checkpoint.persisted_head_snapshot_id == prepared.start_head:
            checkpoint.mark_turn(None)
            await prepared.lease.release(discard=True)  # nothing was committed
        else:
            await self._abandon(prepared, error)

    async def _cancel_committed(self, key: ConversationKey, turn_id: str) -> bool:
        """Undo a committed turn that paused: the conversation's head goes back to before
        it, and it (with every turn after it on the lineage) is recorded ``cancelled``.

        Nothing of it is deleted (its snapshots stay, off the lineage); ``False`` when the
        turn is not on the conversation's lineage. ``ConversationBusyError`` while a turn
        runs, ``ConversationNotFoundError`` for an unknown conversation.
        """
        lease = await self._leases.acquire(key, create=False)
        state = lease.session.state
        checkpoint, good = await self._load(key, state)
        undone = [] if checkpoint is None or good is None else turns_from(
            checkpoint, good, turn_id)
        if checkpoint is None or not undone:
            await lease.release()
            return False
        parent = undone[0][1].parent_snapshot_id
        generation = int(state.get(GENERATION_KEY, 0))
        at = time.time()

        def rewind(state: dict[str, Any]) -> None:
            store_session_checkpoint(state, checkpoint, parent)
            if parent is None:  # nothing before it: the conversation starts afresh
                state[GENERATION_KEY] = max(int(state.get(GENERATION_KEY, 0)), generation + 1)
            for mark, _first in undone:
                record_outcome(state, mark, "cancelled", "cancelled after it paused", at)

        await lease.release(rewind)
        return True

    # -- deleting ------------------------------------------------------------------------

    def _holds_conversation(self, state: dict[str, Any]) -> bool:
        return _CHECKPOINT in state

    async def delete_conversation(
        self, conversation_id: str, *, principal: str | None = None
    ) -> None:
        """Forget the conversation and delete its checkpoint; a later run starts afresh.

        Raises ``ConversationNotFoundError`` if there is none, ``ConversationBusyError`` if
        it is running.
        """
        key = ConversationKey(principal, conversation_id)
        lease = await self._leases.acquire(key, create=False)
        ref = lease.session.state.get(_CHECKPOINT)
        generation = int(lease.session.state.get(GENERATION_KEY, 0))

        def tombstone(state: dict[str, Any]) -> None:
            state.pop(_CHECKPOINT, None)
            state[GENERATION_KEY] = generation + 1

        await lease.release(tombstone)
        if not isinstance(ref, CheckpointReference):
            raise ConversationNotFoundError(conversation_id)
        with contextlib.suppress(CheckpointNotFoundError):
            await self.checkpoint_storage.delete(ref.checkpoint_id)

    async def recover(
        self, conversation_id: str, *, principal: str | None = None
    ) -> ResumeToken:
        """Continue the conversation from the head its storage has now, after a lost head.

        The session's reference is re-pointed at storage's current head (what came after it
        is gone for good); the returned token names it. Refused with ``ConversationBusyError``
        while a live lease is held; ``ConversationNotFoundError`` for an unknown
        conversation, ``CheckpointNotFoundError`` when storage kept nothing of it.
        """
        return await recover_conversation(
            self.session_store, self.checkpoint_storage, conversation_id,
            principal=principal, leases=self._leases)

    async def _probe_more(self) -> None:
        with contextlib.suppress(CheckpointNotFoundError):
            await self.checkpoint_storage.load("checkflow-readiness-probe")


_NATIVE = TurnOrigin()


def _with_data(prepared: Prepared) -> dict[str, Any]:
    """The turn's mark with its origin's data: what the session records of a turn off the
    lineage, so its protocol can still render it."""
    mark, origin = dict(prepared.mark or {}), prepared.origin
    if origin is not None and origin.data:
        mark["data"] = dict(origin.data)
    return mark


def _log_failure(prepared: Prepared, error: BaseException) -> None:
    """The one ERROR record of a failed run, with its ids (also as ``extra`` fields)."""
    checkpoint = prepared.checkpoint
    ids = {"workflow_name": checkpoint.workflow_name,
           "conversation_id": prepared.key.conversation_id,
           "checkpoint_id": checkpoint.checkpoint_id,
           "snapshot_id": checkpoint.head_snapshot_id,
           "good_snapshot_id": prepared.good_head}
    _log.error("workflow %r failed in conversation %r (checkpoint %s, snapshot %s): %s: %s",
               ids["workflow_name"], ids["conversation_id"], ids["checkpoint_id"],
               ids["snapshot_id"], type(error).__name__, error, exc_info=error, extra=ids)
