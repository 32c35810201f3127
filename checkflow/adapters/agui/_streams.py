"""The AG-UI event streams of one request: a turn run, replayed, attached to, or reconnected.

Each is ``RUN_STARTED`` ... one terminal event, and every ending is rendered from what the host
says after the turn: the turn's result, or the lineage (``Host.turns``) and the turn's record
(``Host.find_turn``). The shared state is read from the snapshots the turn commits (each
``SnapshotCommittedEvent`` carries its own), decoded only when its bytes changed, and sent as
the translator decides (a snapshot first, deltas after), without checkflow's own
``CLIENT_TOOLS_KEY`` (the client's tools are its input, not state it shows). Nothing is
written here. This module must never load a checkpoint or a session itself, nor import a
private hosting module.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from ag_ui.core import BaseEvent

from checkflow.adapters.agui._events import RunTranslator
from checkflow.adapters.agui._thread import ThreadView, message_ids
from checkflow.adapters.agui._tools import request_views
from checkflow.agents import CLIENT_TOOLS_KEY
from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.errors import (
    CheckflowError,
    ConversationNotFoundError,
    NoCheckpointsError,
    SnapshotNotFoundError,
)
from checkflow.hosting import (
    ConversationState,
    Host,
    HostedRun,
    ResumeToken,
    ServerSentEvent,
    TurnRecord,
    describe_error,
    jsonable,
)
from checkflow.workflows import (
    OutputEvent,
    RunStatus,
    SnapshotCommittedEvent,
    WorkflowEvent,
    inspect_shared_state,
    same_shared_state,
)

__all__ = ["Streams", "describe", "error_code"]

TURN_FAILED = "turn_failed"
"""The ``RUN_ERROR`` code of a thread whose last turn failed (or whose process stopped)."""

_MISSING = (ConversationNotFoundError, NoCheckpointsError)


def _frames(events: Iterable[BaseEvent]) -> bytes:
    """Events that are ready together, as one chunk of SSE frames: one write, not one per
    event (each item of a stream costs the response a task and a write)."""
    return b"".join(ServerSentEvent(data=event.model_dump_json(by_alias=True)).encode()
                    for event in events)


def _token_view(token: ResumeToken | None) -> dict[str, str] | None:
    if token is None:
        return None
    return {"checkpointId": token.checkpoint_id, "snapshotId": token.snapshot_id}


def error_code(exc: BaseException, refused: Iterable[tuple[type[BaseException], str]] = ()
               ) -> str:
    """The ``RUN_ERROR`` code of an error: its own code here, else the native API's."""
    for kind, code in refused:
        if isinstance(exc, kind):
            return code
    _status, body, _headers = describe_error(exc)
    error = body.get("error") if isinstance(body, Mapping) else None
    native = error.get("code") if isinstance(error, Mapping) else None
    return str(native) if native else "internal_error"


def describe(exc: BaseException | str | None) -> str:
    """A ``RUN_ERROR`` message: the error's type and text (a record's error is text already)."""
    if exc is None:
        return "the run failed"
    if isinstance(exc, str):
        return exc
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _snapshot_at(checkpoint: Checkpoint | None, token: ResumeToken | None
                 ) -> CheckpointSnapshot | None:
    if checkpoint is None or token is None:
        return None
    try:
        return checkpoint.get_snapshot(token.snapshot_id)
    except CheckflowError:
        return None


def _state_json(snapshot: CheckpointSnapshot) -> dict[str, Any] | None:
    """The shared state at ``snapshot`` as JSON, without ``CLIENT_TOOLS_KEY`` (``None`` when
    it cannot be read)."""
    try:
        shared = inspect_shared_state(snapshot)
    except CheckflowError:
        return None
    shared.pop(CLIENT_TOOLS_KEY, None)
    state = jsonable(shared)
    return state if isinstance(state, dict) else None


class Streams:
    """The streams of one AG-UI request on ``thread_id`` (principal-scoped)."""

    def __init__(self, host: Host, thread_id: str, run_id: str, principal: str | None) -> None:
        self.host = host
        self.thread_id = thread_id
        self.principal = principal
        self.translator = RunTranslator(thread_id, run_id, to_json=jsonable)
        self._shown: CheckpointSnapshot | None = None  # whose shared state was sent last

    def _translate(self, event: WorkflowEvent) -> list[BaseEvent]:
        """The event's AG-UI events; after a committed snapshot, its shared state if it
        changed (as the translator sends it: a snapshot first, then deltas)."""
        out = self.translator.translate(event)
        if type(event) is SnapshotCommittedEvent and event.snapshot is not None:
            out.extend(self._state_events(event.snapshot))
        return out

    def _state_events(self, snapshot: CheckpointSnapshot) -> list[BaseEvent]:
        shown = self._shown
        if shown is not None and (shown is snapshot or same_shared_state(shown, snapshot)):
            return []
        state = _state_json(snapshot)
        if state is None:
            return []
        self._shown = snapshot
        return self.translator.state(state)

    def _state_at(self, checkpoint: Checkpoint | None, token: ResumeToken | None
                  ) -> dict[str, Any] | None:
        """The shared state at ``token`` for an ending; ``None`` (send nothing) when there is
        none (an agent host) or the stream already showed exactly that state."""
        snapshot = _snapshot_at(checkpoint, token)
        if snapshot is None:
            return None
        shown = self._shown
        if shown is not None and (shown is snapshot or same_shared_state(shown, snapshot)):
            return None
        self._shown = snapshot
        return _state_json(snapshot)

    # -- reading the thread ------------------------------------------------------------------

    async def view(self) -> ThreadView:
        """The thread as its lineage is now (empty when there is no conversation)."""
        try:
            turns = await self.host.turns(self.thread_id, principal=self.principal)
        except _MISSING:
            turns = []
        return ThreadView.of(turns, jsonable)

    async def shared_state(self, at: str | None = None) -> dict[str, Any] | None:
        """The shared state (JSON) at snapshot ``at``, else at the thread's head; ``{}`` for
        a thread that has none yet (or an agent's), ``None`` for an unknown snapshot."""
        try:
            checkpoint, token = await self.host.get_checkpoint(self.thread_id,
                                                               principal=self.principal)
        except _MISSING:
            return {}
        try:
            snapshot = checkpoint.get_snapshot(at or token.snapshot_id)
        except SnapshotNotFoundError:
            return None
        return _state_json(snapshot) or {}

    async def conversation(self) -> ConversationState | None:
        try:
            return await self.host.get_conversation(self.thread_id, principal=self.principal)
        except _MISSING:
            return None

    async def _latest_off_lineage(self, state: ConversationState | None) -> TurnRecord | None:
        """The thread's latest turn when it ended off the lineage (failed, cancelled, or its
        process stopped): its snapshots lie past the conversation's head."""
        if state is None or state.checkpoint is None or state.resume_token is None:
            return None
        beyond = state.storage_head_snapshot_id
        if beyond is None or beyond == state.resume_token.snapshot_id:
            return None
        try:
            mark = state.checkpoint.get_snapshot(beyond).metadata.get("turn")
        except CheckflowError:
            return None
        if not isinstance(mark, Mapping) or not isinstance(mark.get("id"), str):
            return None
        record = await self.host.find_turn(self.thread_id, turn_id=mark["id"],
                                           principal=self.principal)
        return record if record is not None and record.state in ("failed", "cancelled") else None

    # -- the streams -------------------------------------------------------------------------

    async def refused(self, code: str, message: str) -> AsyncIterator[bytes]:
        yield _frames([self.translator.started()])
        yield _frames(self.translator.error(code, message))

    async def run(self, turn: HostedRun, view: ThreadView, taken: Sequence[Mapping[str, Any]],
                  *, branched: bool, refused: Iterable[tuple[type[BaseException], str]]
                  ) -> AsyncIterator[bytes]:
        """A turn run for this request: its events, then its outcome."""
        yield _frames([self.translator.started()])
        self.translator.name_messages(message_ids(turn.turn_id))
        self.translator.tools.answered(  # the client's tool messages hold those results
            str(m["toolCallId"]) for m in taken if m.get("role") == "tool")
        completed = False
        try:
            async for event in turn:
                if chunk := _frames(self._translate(event)):
                    yield chunk
            result = await turn.get_result()
            completed = True
        except Exception as exc:  # after the stream opened, every failure is a RUN_ERROR
            yield _frames(self.translator.error(error_code(exc, refused), describe(exc)))
            return
        finally:
            if not completed:
                await turn.aclose()  # a client that left cancels at the next safe point
        checkpoint = None if result.result is None else result.result.checkpoint
        if result.status is RunStatus.FAILED:  # the state back at the last good head
            yield _frames(self.translator.error(
                "workflow_failed", describe(result.error),
                state=self._state_at(checkpoint, result.resume_token)))
            return
        if result.status is RunStatus.CANCELLED:  # the head did not move: the thread as it was
            transcript = view.transcript
            self.translator.messages.clear()
        elif branched:  # the turn continued another line: read the new lineage
            transcript = (await self.view()).transcript
        else:
            transcript = [*view.transcript, *(dict(m) for m in taken)]
        yield _frames(self.translator.finish(
            result.status, pending=request_views(result.pending_requests.values()),
            resume_token=_token_view(result.resume_token), transcript=transcript,
            state=self._state_at(checkpoint, result.resume_token),
        ))

    async def guarded(self, events: AsyncGenerator[bytes, None]
                      ) -> AsyncIterator[bytes]:
        """``events``, but a failure after the stream opened ends it with ``RUN_ERROR``."""
        try:
            async for event in events:
                yield event
        except Exception as exc:  # a store that failed while following or reading the thread
            if not self.translator.finished:
                yield _frames(self.translator.error(error_code(exc), describe(exc)))
        finally:
            await events.aclose()

    async def replay(self, record: TurnRecord, view: ThreadView
                     ) -> AsyncGenerator[bytes, None]:
        """A retry (same runId) of a committed turn: its recorded outcome; nothing runs."""
        yield _frames([self.translator.started()])
        self.translator.name_messages(message_ids(record.turn_id))
        for output in record.outputs:
            if chunk := _frames(self.translator.translate(OutputEvent("", output))):
                yield chunk
        state = await self.conversation()
        yield _frames(await self._ending(record, state, view))

    async def attach(self, turn_id: str) -> AsyncGenerator[bytes, None]:
        """A retry (same runId) of a turn still running: follow it to its end, then its
        outcome."""
        yield _frames([self.translator.started()])
        self.translator.name_messages(message_ids(turn_id))
        async for translated in self._follow(turn_id):
            yield translated
        record = await self.host.find_turn(self.thread_id, turn_id=turn_id,
                                           principal=self.principal)
        view, state = await self.view(), await self.conversation()
        yield _frames(await self._ending(record, state, view, missing_is_failure=True))

    async def reconnect(self, view: ThreadView) -> AsyncGenerator[bytes, None]:
        """Nothing new and nothing to resume: follow the turn running now, if any, to its end;
        then the thread as it stands (its open interrupts, or how its last turn ended)."""
        yield _frames([self.translator.started()])
        followed = False
        async for translated in self._follow(None):
            followed = True
            yield translated
        if followed:
            self.translator.messages.clear()  # its ids are the lineage's, shown just below
            view = await self.view()
        state = await self.conversation()
        latest = await self._latest_off_lineage(state)
        yield _frames(await self._ending(latest, state, view))

    async def _follow(self, turn_id: str | None) -> AsyncIterator[bytes]:
        events = self.host.follow(self.thread_id, turn_id=turn_id, principal=self.principal)
        try:
            async for event in events:
                if chunk := _frames(self._translate(event)):
                    yield chunk
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    async def _ending(self, record: TurnRecord | None, state: ConversationState | None,
                      view: ThreadView, *, missing_is_failure: bool = False) -> list[BaseEvent]:
        """The end of a stream that ran nothing itself: ``record``'s outcome (a committed
        turn's, or a failure's), else the head's (its open interrupts, or success)."""
        token = None if state is None else state.resume_token
        shared = self._state_at(None if state is None else state.checkpoint, token)
        if (record is None and missing_is_failure) or (
                record is not None and record.state == "failed"):
            why = "the turn's record is gone" if record is None else describe(record.error)
            return self.translator.error(
                TURN_FAILED, f"the thread's last run failed ({why}); the thread is back at "
                             f"its last good state", transcript=view.transcript, state=shared)
        status, pending = RunStatus.IDLE, list(view.open.values())
        if pending:
            status = RunStatus.AWAITING_RESPONSES
        elif record is not None and record.state == "cancelled":
            status = RunStatus.CANCELLED
        if record is not None and record.state == "committed":
            status, pending = record.status, list(record.pending_requests.values())
            checkpoint_id = record.checkpoint_id or (None if token is None
                                                     else token.checkpoint_id)
            if checkpoint_id is not None and record.last_snapshot_id is not None:
                token = ResumeToken(checkpoint_id, record.last_snapshot_id)
        return self.translator.finish(
            status, pending=request_views(pending), resume_token=_token_view(token),
            transcript=view.transcript, state=shared)
