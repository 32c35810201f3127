"""``WorkflowHost``: serve one workflow to many conversations, each with its own checkpoint.

Per conversation: claim it (busy set, then session lease), load the checkpoint its session
references (or create one attached to the host's storage), check the resume token, branch if
asked, run, and store the session back only once the run's outcome is known. The session
holds a ``CheckpointReference`` to the conversation's last good head; nothing else maps
conversations to checkpoints. This module must never queue a request for a busy conversation
and never import the web framework.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, TypeVar, Unpack, overload

from checkflow.checkpoints import Checkpoint, CheckpointReference, CheckpointStorage
from checkflow.errors import (
    CheckflowError,
    CheckpointConflictError,
    CheckpointInUseError,
    CheckpointNotFoundError,
    ConversationBusyError,
    ConversationNotFoundError,
    GraphSignatureMismatchError,
    InvalidMessageError,
    SnapshotNotFoundError,
    StaleResumeTokenError,
    WorkflowConvergenceError,
    WorkflowRunError,
)
from checkflow.hosting import _engine
from checkflow.hosting._convert import MessageConverter
from checkflow.hosting._keys import ConversationKey
from checkflow.hosting._lease import ConversationLease, LeaseManager, new_owner_id
from checkflow.hosting._results import ConversationState, HostedRunResult, ResumeToken
from checkflow.hosting._target import Resolver
from checkflow.sessions import InMemorySessionStore, SessionStore
from checkflow.storage import InMemoryCheckpointStorage
from checkflow.workflows import (
    RunStatus,
    Workflow,
    WorkflowEvent,
    WorkflowRunResult,
    WorkflowRunStream,
)

__all__ = ["HostedRunStream", "RunOptions", "WorkflowHost"]

T = TypeVar("T")
SignatureMismatchPolicy = Literal["reject", "new_checkpoint"]
_FAILURES = (WorkflowRunError, WorkflowConvergenceError)


class RunOptions(TypedDict, total=False):
    """The keyword arguments of ``WorkflowHost.run`` besides ``stream`` (all optional)."""

    message: Any
    responses: Mapping[str, Any] | None
    principal: str | None
    from_snapshot: str | None
    resume_token: ResumeToken | None


@dataclass(slots=True)
class _Prepared:
    """A conversation claimed and ready to run: its lease, checkpoint and last good head."""

    lease: ConversationLease
    checkpoint: Checkpoint
    generation: int
    good_head: str | None


class WorkflowHost:
    """Runs one workflow for many conversations; each conversation's session holds its checkpoint.

    ``target`` is a ``Workflow``, a ``WorkflowBuilder`` or a zero-argument factory (sync or
    async), resolved once. Sessions go to ``session_store`` and checkpoints to
    ``checkpoint_storage`` (both in memory by default). With
    ``on_signature_mismatch="new_checkpoint"`` a redeployed, changed workflow starts such
    conversations afresh (the old checkpoint is kept) instead of refusing them with
    ``GraphSignatureMismatchError``. ``lease_seconds`` bounds how long a host that died
    mid-run keeps a conversation from other hosts.
    """

    def __init__(
        self,
        target: Any,
        *,
        session_store: SessionStore | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        on_signature_mismatch: SignatureMismatchPolicy = "reject",
        lease_seconds: float = 300.0,
    ) -> None:
        if on_signature_mismatch not in ("reject", "new_checkpoint"):
            raise ValueError(
                "on_signature_mismatch must be 'reject' or 'new_checkpoint', "
                f"not {on_signature_mismatch!r}"
            )
        self.session_store: SessionStore = session_store or InMemorySessionStore()
        self.checkpoint_storage: CheckpointStorage = (
            checkpoint_storage or InMemoryCheckpointStorage()
        )
        self.on_signature_mismatch = on_signature_mismatch
        self._workflow: Resolver[Workflow] = Resolver(
            target, is_instance=lambda t: isinstance(t, Workflow), what="Workflow"
        )
        self._converter: MessageConverter | None = None
        self._leases = LeaseManager(
            self.session_store, owner=new_owner_id(), lease_seconds=lease_seconds
        )

    async def workflow(self) -> Workflow:
        """The hosted workflow (resolved on first use)."""
        return await self._workflow.get()

    async def convert_message(self, message: Any) -> Any:
        """``message`` as the first start-executor input type it fits, most specific first."""
        if self._converter is None:
            self._converter = MessageConverter((await self.workflow()).input_types)
        return self._converter.convert(message)

    # -- running -----------------------------------------------------------------------------

    @overload
    async def run(
        self, conversation_id: str, *, stream: Literal[False] = False, **options: Unpack[RunOptions]
    ) -> HostedRunResult: ...

    @overload
    async def run(
        self, conversation_id: str, *, stream: Literal[True], **options: Unpack[RunOptions]
    ) -> HostedRunStream: ...

    async def run(
        self,
        conversation_id: str,
        *,
        message: Any = None,
        responses: Mapping[str, Any] | None = None,
        principal: str | None = None,
        from_snapshot: str | None = None,
        resume_token: ResumeToken | None = None,
        stream: bool = False,
    ) -> HostedRunResult | HostedRunStream:
        """Run the conversation once: a ``HostedRunResult``, or a ``HostedRunStream``.

        Raises ``ConversationBusyError`` at once if the conversation is running (here or on
        another host), ``StaleResumeTokenError`` if ``resume_token`` no longer names the head,
        ``SnapshotNotFoundError`` for an unknown ``from_snapshot``, ``InvalidMessageError``
        for a message no start handler accepts, ``GraphSignatureMismatchError`` when the
        conversation's checkpoint belongs to another graph (policy ``"reject"``). A workflow
        that fails is not an exception here: the result has status ``FAILED`` and ``error``.
        """
        if message is not None and responses is not None:
            raise ValueError("give a message or responses, not both")
        workflow = await self.workflow()
        if message is not None:
            message = await self.convert_message(message)
        key = ConversationKey(principal, conversation_id)
        lease = await self._leases.acquire(key)
        try:
            prepared = await self._prepare(workflow, key, lease, from_snapshot, resume_token)
            if prepared.checkpoint.head_snapshot_id is None and message is None:
                raise InvalidMessageError(
                    f"conversation {conversation_id!r} has nothing to resume; send a message"
                )
        except BaseException:
            await _shielded(lease.release(discard=True))  # refused: nothing was committed
            raise
        kwargs: dict[str, Any] = {"checkpoint": prepared.checkpoint}
        if responses is not None:
            kwargs["responses"] = dict(responses)
        if stream:
            try:
                inner = workflow.run(message, stream=True, **kwargs)
            except BaseException:
                await _shielded(lease.release(discard=True))
                raise
            return HostedRunStream(self, key, prepared, inner)
        return await _shielded(self._run_to_end(key, prepared, workflow.run(message, **kwargs)))

    async def _run_to_end(
        self, key: ConversationKey, prepared: _Prepared, run: Awaitable[WorkflowRunResult]
    ) -> HostedRunResult:
        try:
            result: WorkflowRunResult = await run
        except _FAILURES as exc:
            return await self._finish(key, prepared, exc.result, exc)
        except BaseException as exc:
            await self._abandon(prepared)
            if _is_conflict(exc):
                raise ConversationBusyError(key.conversation_id) from exc
            raise
        return await self._finish(key, prepared, result, None)

    async def _prepare(
        self,
        workflow: Workflow,
        key: ConversationKey,
        lease: ConversationLease,
        from_snapshot: str | None,
        resume_token: ResumeToken | None,
    ) -> _Prepared:
        state = lease.session.state
        generation = int(state.get("generation", 0))
        checkpoint, good_head = await self._load_referenced(state.get("checkpoint"))
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
            generation += 1 if "checkpoint" in state else 0
        elif checkpoint.graph_signature_hash != workflow.graph_signature_hash:
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
        else:
            target = from_snapshot if from_snapshot is not None else good_head
            if target is not None and target != checkpoint.head_snapshot_id:
                checkpoint.restart_from(target)
        return _Prepared(lease, checkpoint, generation, good_head)

    async def _load_referenced(self, ref: Any) -> tuple[Checkpoint | None, str | None]:
        """The referenced checkpoint and the last good head; ``(None, None)`` if it is gone."""
        if not isinstance(ref, CheckpointReference):
            return None, None
        try:
            checkpoint = await self.checkpoint_storage.load(ref.checkpoint_id)
        except CheckpointNotFoundError:
            return None, None
        head = ref.head_snapshot_id
        if head is not None:
            try:
                checkpoint.get_snapshot(head)
            except SnapshotNotFoundError:
                return None, None  # pruned away beneath us: nothing to resume from
        return checkpoint, head

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
            generation += 1
            checkpoint_id = key.checkpoint_id(generation)
        checkpoint = workflow.create_checkpoint(
            checkpoint_id=checkpoint_id, checkpoint_storage=self.checkpoint_storage
        )
        return checkpoint, generation

    async def _finish(
        self,
        key: ConversationKey,
        prepared: _Prepared,
        result: WorkflowRunResult | None,
        error: BaseException | None,
    ) -> HostedRunResult:
        """Store the session (new good head, or the old one after a failure) and end the lease."""
        checkpoint = prepared.checkpoint
        good_head = checkpoint.head_snapshot_id if error is None else prepared.good_head
        generation = prepared.generation
        if good_head is None and checkpoint.head_snapshot_id is not None:
            # A failed first run: the conversation stays fresh; its attempt is discarded.
            generation += 1
            with contextlib.suppress(CheckflowError):
                await self.checkpoint_storage.delete(checkpoint.checkpoint_id)

        def update(state: dict[str, Any]) -> None:
            state["generation"] = max(int(state.get("generation", 0)), generation)
            if good_head is None:
                state.pop("checkpoint", None)
            else:
                state["checkpoint"] = CheckpointReference(checkpoint.checkpoint_id, good_head)

        await prepared.lease.release(update)
        token = None if good_head is None else ResumeToken(checkpoint.checkpoint_id, good_head)
        if result is None:
            return HostedRunResult(key.conversation_id, RunStatus.FAILED, resume_token=token,
                                   error=error)
        return HostedRunResult(
            key.conversation_id,
            RunStatus.FAILED if error is not None else result.status,
            outputs=result.get_outputs(),
            pending_requests=dict(result.pending_requests),
            resume_token=token,
            error=error,
            result=result,
        )

    async def _abandon(self, prepared: _Prepared) -> None:
        """End the lease after a run that did not finish (cancelled, conflict, storage error).

        The conversation keeps its good head; an unfinished first run moves the generation
        on, so the next attempt never collides with whatever that run left in the storage.
        """
        bump = 1 if prepared.good_head is None else 0

        def update(state: dict[str, Any]) -> None:
            state["generation"] = max(int(state.get("generation", 0)), prepared.generation + bump)

        await prepared.lease.release(update)

    # -- reading and deleting ----------------------------------------------------------------

    async def get_conversation(
        self, conversation_id: str, *, principal: str | None = None
    ) -> ConversationState:
        """The conversation at its head: status, all outputs so far, pending requests, token.

        Raises ``ConversationNotFoundError`` for a conversation this principal does not have.
        """
        checkpoint, token = await self.get_checkpoint(conversation_id, principal=principal)
        workflow = await self.workflow()
        head = checkpoint.get_snapshot(token.snapshot_id)
        status, outputs, pending = _engine.head_facts(workflow, head)
        return ConversationState(conversation_id, status, outputs, pending, token, checkpoint)

    async def get_checkpoint(
        self, conversation_id: str, *, principal: str | None = None
    ) -> tuple[Checkpoint, ResumeToken]:
        """The conversation's checkpoint, freshly loaded for reading, and its last good head.

        Decodes no state (snapshot views use the inspection decode). The checkpoint's own
        head may be ahead of the token's after a failed run; the token names the real one.
        Raises ``ConversationNotFoundError`` for a conversation this principal does not have.
        """
        key = ConversationKey(principal, conversation_id)
        session = await self.session_store.get(key.session_id)
        ref = None if session is None else session.state.get("checkpoint")
        checkpoint, good_head = await self._load_referenced(ref)
        if checkpoint is None or good_head is None:
            raise ConversationNotFoundError(conversation_id)
        return checkpoint, ResumeToken(checkpoint.checkpoint_id, good_head)

    async def delete_conversation(
        self, conversation_id: str, *, principal: str | None = None
    ) -> None:
        """Forget the conversation and delete its checkpoint; a later run starts afresh.

        Raises ``ConversationNotFoundError`` if there is none, ``ConversationBusyError`` if
        it is running.
        """
        key = ConversationKey(principal, conversation_id)
        lease = await self._leases.acquire(key, create=False)
        ref = lease.session.state.get("checkpoint")
        generation = int(lease.session.state.get("generation", 0))

        def tombstone(state: dict[str, Any]) -> None:
            state.pop("checkpoint", None)
            state["generation"] = generation + 1

        await _shielded(lease.release(tombstone))
        if not isinstance(ref, CheckpointReference):
            raise ConversationNotFoundError(conversation_id)
        with contextlib.suppress(CheckpointNotFoundError):
            await self.checkpoint_storage.delete(ref.checkpoint_id)

    async def check_ready(self) -> None:
        """Raise if the session store or the checkpoint storage cannot be reached."""
        await self.session_store.get("checkflow-readiness-probe")
        with contextlib.suppress(CheckpointNotFoundError):
            await self.checkpoint_storage.load("checkflow-readiness-probe")


class HostedRunStream:
    """A streamed hosted run: iterate the workflow's events, then ``await get_result()``.

    The conversation stays claimed until the stream is exhausted or ``aclose()``d; closing
    early cancels the run between supersteps and keeps the conversation's last good head.
    """

    def __init__(
        self,
        host: WorkflowHost,
        key: ConversationKey,
        prepared: _Prepared,
        inner: WorkflowRunStream,
    ) -> None:
        self._host = host
        self._key = key
        self._prepared = prepared
        self._inner = inner
        self._result: HostedRunResult | None = None
        self._error: BaseException | None = None
        self._done = asyncio.Event()
        self._finishing = False

    def __aiter__(self) -> AsyncIterator[WorkflowEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WorkflowEvent]:
        exhausted = False
        try:
            async for event in self._inner:
                yield event
            exhausted = True
        except _FAILURES:
            exhausted = True  # the failure is reported by get_result()
        finally:
            if exhausted and not self._finishing:
                await _shielded(self._complete())
            elif not exhausted:
                await self.aclose()

    async def _complete(self) -> None:
        self._finishing = True
        host, key, prepared = self._host, self._key, self._prepared
        try:
            result = await self._inner.get_result()
        except _FAILURES as exc:
            self._result = await host._finish(key, prepared, exc.result, exc)
        except BaseException as exc:
            await host._abandon(prepared)
            self._error = ConversationBusyError(key.conversation_id) if _is_conflict(exc) else exc
            if self._error is not exc:
                raise self._error from exc
            raise
        else:
            self._result = await host._finish(key, prepared, result, None)
        finally:
            self._done.set()

    async def get_result(self) -> HostedRunResult:
        """The run's outcome (runs the rest of the stream if it was not consumed)."""
        if not self._finishing:
            await _shielded(self._complete())
        await self._done.wait()
        if self._result is None:
            raise self._error or ConversationBusyError(self._key.conversation_id)
        return self._result

    async def aclose(self) -> None:
        """Stop the run (between supersteps) and release the conversation."""
        if self._finishing:
            return
        self._finishing = True
        try:
            await self._inner.aclose()
        finally:
            await _shielded(self._host._abandon(self._prepared))
            self._done.set()


def _is_conflict(exc: BaseException) -> bool:
    """Another run got the checkpoint first: for the client, the conversation was busy."""
    return isinstance(exc, (CheckpointConflictError, CheckpointInUseError))


async def _shielded(awaitable: Awaitable[T]) -> T:
    """Finish ``awaitable`` even if the caller is cancelled (session writes must land)."""
    return await asyncio.shield(asyncio.ensure_future(awaitable))
