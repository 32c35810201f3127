"""The Responses operations on a host: create (blocking, streamed, background), retrieve,
replay, cancel, delete and list input items.

Every turn runs as a streamed host run whose events an ``EventBuilder`` turns into the
response's events; a blocking create simply does not send them. A run is started (and its
input accepted) before anything is stored, so a refused request stores nothing; a stored
response's record is written once it exists and again when it ends, compare-and-swap on its
version. Background runs are tasks of this object; their events are replayed to late readers
through ``Host.subscribe`` and, once finished, from the record's events log. This module must
never build HTTP responses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import msgspec

from checkflow.adapters.foundry._errors import ResponsesError
from checkflow.adapters.foundry._events import Event, EventBuilder
from checkflow.adapters.foundry._objects import response_object
from checkflow.adapters.foundry._plan import Plan, plan_response
from checkflow.adapters.foundry._records import NAMESPACE, ResponseRecord, ResponseStore
from checkflow.adapters.foundry._translate import RunTranslator, response_status, run_error
from checkflow.adapters.foundry._wire import CreateRequest
from checkflow.errors import (
    ConversationNotFoundError,
    InvalidResponseError,
    RecordTooLargeError,
    SessionConflictError,
    SnapshotNotFoundError,
)
from checkflow.hosting import Host, HostDescription, HostedRun, HostedRunResult
from checkflow.workflows import RunStatus, WorkflowEvent, WorkflowStartedEvent

__all__ = ["ResponsesService", "body_of"]

_log = logging.getLogger("checkflow.adapters.foundry")
_WAIT_SECONDS = 10.0
_FOLLOW_SECONDS = 600.0  # how long a replay follows a run in another process (SSE pings meanwhile)


def body_of(record: ResponseRecord, output: list[dict[str, Any]] | None = None,
            status: str | None = None) -> dict[str, Any]:
    """The Response object a record stands for (``output``/``status`` override while running)."""
    return response_object(
        id=record.id, created_at=record.created_at, status=status or record.status,
        model=record.model, output=record.output if output is None else output,
        conversation_id=record.conversation_id,
        previous_response_id=record.previous_response_id, instructions=record.instructions,
        metadata=record.metadata, store=record.store, background=record.background,
        completed_at=record.completed_at, error=record.error,
        incomplete_reason="max_output_tokens" if record.status == "incomplete" else None,
    )


@dataclass(slots=True)
class _Turn:
    """A started run: the host's stream, its first events (already read) and the rest."""

    run: HostedRun
    primed: list[WorkflowEvent]
    rest: AsyncIterator[WorkflowEvent] | None


class ResponsesService:
    """The Responses protocol over one ``Host``; every method takes the request's principal."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._records = host.records(NAMESPACE)
        self.store = ResponseStore(self._records)
        self._description: HostDescription | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}

    async def description(self) -> HostDescription:
        if self._description is None:
            self._description = await self.host.describe()
        return self._description

    async def plan(
        self, request: CreateRequest, *, principal: str | None, session_hint: str | None
    ) -> Plan:
        """Resolve ``request`` (``ResponsesError`` for refusals that need stored state)."""

        async def pending_at_head(conversation_id: str) -> list[str]:
            try:
                state = await self.host.get_conversation(conversation_id, principal=principal)
            except ConversationNotFoundError:
                return []
            return list(state.pending_requests)

        return await plan_response(request, store=self.store,
                                   description=await self.description(), principal=principal,
                                   pending_at_head=pending_at_head, session_hint=session_hint)

    # -- starting a turn ------------------------------------------------------------------

    async def _start(self, plan: Plan) -> _Turn:
        """Start the run and read up to its first event past the input check, so a refusal
        (busy, wrong reply, bad message) is raised here with nothing committed."""
        responses = plan.responses
        record = plan.record
        self._check_room(record)
        while True:
            try:
                run = await self.host.run(
                    record.conversation_id, message=plan.message, responses=responses,
                    principal=record.principal, from_snapshot=plan.from_snapshot, stream=True)
                return await self._prime(run)
            except InvalidResponseError as exc:
                responses = self._retry_as_text(plan, responses, exc)
            except SnapshotNotFoundError as exc:
                raise ResponsesError(
                    400, f"previous response {record.previous_response_id!r} can no longer "
                    f"be continued: its snapshot {exc.snapshot_id!r} is gone",
                    param="previous_response_id", code="previous_response_not_found") from None

    def _check_room(self, record: ResponseRecord) -> None:
        """Refuse a response whose record is over the host's bound before anything runs
        (``RecordTooLargeError``, 409 ``record_too_large``): its input alone is stored."""
        limit = self._records.max_bytes
        if limit is None or not record.store:
            return
        size = self._records.size_of(msgspec.to_builtins(record))
        if size > limit:
            raise RecordTooLargeError(NAMESPACE, f"response:{record.id}", size=size, limit=limit)

    @staticmethod
    def _mark(turn: _Turn, record: ResponseRecord) -> None:
        if turn.primed:
            record.run_started = turn.primed[0].timestamp.isoformat()

    @staticmethod
    async def _prime(run: HostedRun) -> _Turn:
        events = aiter(run)
        primed: list[WorkflowEvent] = []
        while True:
            try:
                event = await anext(events)
            except StopAsyncIteration:
                return _Turn(run, primed, None)
            primed.append(event)
            if not isinstance(event, WorkflowStartedEvent):
                return _Turn(run, primed, events)

    @staticmethod
    def _retry_as_text(
        plan: Plan, responses: dict[str, Any] | None, exc: InvalidResponseError
    ) -> dict[str, Any]:
        """JSON first, then the text as sent: a reply whose parsed form was refused is tried
        once more as its raw string; one that fits neither is a 400 naming its call."""
        reply = plan.replies.get(exc.request_id)
        if responses is not None and reply is not None and isinstance(reply.output, str) \
                and responses[reply.call_id] is not reply.output:
            return {**responses, reply.call_id: reply.output}
        call = exc.request_id or ", ".join(plan.replies)
        raise ResponsesError(400, f"the output for call {call} does not fit the request: {exc}",
                             param="input", code="invalid_function_call_output") from None

    # -- running a turn -------------------------------------------------------------------

    def _finish(self, record: ResponseRecord, translator: RunTranslator,
                result: HostedRunResult) -> list[Event]:
        """Fill the record from the run's result and build the closing events."""
        record.status = response_status(result.status)
        record.error = run_error(record.status, result.error)
        record.completed_at = int(time.time())
        if result.resume_token is not None:
            record.snapshot_id = result.resume_token.snapshot_id
            record.checkpoint_id = result.resume_token.checkpoint_id
        record.pending_calls = list(result.pending_requests)

        def final(output: list[dict[str, Any]]) -> dict[str, Any]:
            record.output = output
            return body_of(record)

        events = translator.finish(result.pending_requests, final)
        record.events = translator.builder.events
        return events

    async def _drive(self, turn: _Turn, record: ResponseRecord, builder: EventBuilder,
                     version: str | None) -> AsyncIterator[Event]:
        """The run's Responses events as they happen; the record is stored when it ends.

        A host error mid-run ends the response ``failed`` (with its terminal event); a reader
        that goes away first (or a cancelled task) stores it ``cancelled``.
        """
        translator = RunTranslator(builder)
        try:
            for event in turn.primed:
                for out in translator.on_event(event):
                    yield out
            if turn.rest is not None:
                async for event in turn.rest:
                    for out in translator.on_event(event):
                        yield out
            result = await turn.run.get_result()
        except Exception as exc:
            _log.exception("response %s: the run broke off", record.id)
            await turn.run.aclose()
            result = HostedRunResult(record.conversation_id, RunStatus.FAILED, error=exc)
        except BaseException:
            await turn.run.aclose()
            record.status, record.completed_at = "cancelled", int(time.time())
            record.output, record.events = list(builder.output), builder.events
            with contextlib.suppress(Exception):
                await asyncio.shield(self._save(record, version))
            raise
        closing = self._finish(record, translator, result)
        await asyncio.shield(self._save(record, version))
        for out in closing:
            yield out

    async def _save(self, record: ResponseRecord, version: str | None) -> None:
        if not record.store:
            return
        try:
            if version is None:
                await self.store.create(record)
            else:
                await self.store.replace(record, version)
        except SessionConflictError:  # deleted (or cancelled elsewhere) meanwhile
            _log.info("response %s changed while it ran; its final state is not stored",
                      record.id)

    async def _create_or_close(self, turn: _Turn, record: ResponseRecord) -> str:
        self._mark(turn, record)
        try:
            return await self.store.create(record)
        except BaseException:
            await turn.run.aclose()
            raise

    async def create(self, plan: Plan) -> dict[str, Any]:
        """Run to the end and return the final Response (nothing streamed)."""
        turn = await self._start(plan)
        record = plan.record
        builder = EventBuilder(record.id)
        builder.start(lambda status: body_of(record, [], status))
        async for _ in self._drive(turn, record, builder, None):
            pass
        return body_of(record)

    async def create_stream(self, plan: Plan) -> AsyncIterator[Event]:
        """Start the run (refusals raise here), then the response's events as they happen."""
        turn = await self._start(plan)
        record = plan.record
        version = await self._create_or_close(turn, record) if record.store else None
        builder = EventBuilder(record.id)
        return self._stream(turn, record, builder, version)

    async def _stream(self, turn: _Turn, record: ResponseRecord, builder: EventBuilder,
                      version: str | None) -> AsyncIterator[Event]:
        for event in builder.start(lambda status: body_of(record, [], status)):
            yield event
        async for event in self._drive(turn, record, builder, version):
            yield event

    async def create_background(self, plan: Plan) -> ResponseRecord:
        """Start the run, store the response ``in_progress`` and drive it in a task."""
        turn = await self._start(plan)
        record = plan.record
        version = await self._create_or_close(turn, record)
        builder = EventBuilder(record.id)
        builder.start(lambda status: body_of(record, [], status))

        async def drive() -> None:
            try:
                async for _ in self._drive(turn, record, builder, version):
                    pass
            except Exception:
                _log.exception("background response %s failed", record.id)
            finally:
                self._tasks.pop(record.id, None)

        self._tasks[record.id] = asyncio.create_task(drive(), name=f"response {record.id}")
        return record

    # -- reading, replaying, cancelling, deleting -----------------------------------------

    async def load(self, response_id: str, principal: str | None) -> tuple[ResponseRecord, str]:
        """The stored response, or a 404 naming it."""
        loaded = await self.store.load(response_id, principal=principal)
        if loaded is None:
            raise ResponsesError(404, f"no response with id {response_id!r}",
                                 param="response_id", code="response_not_found")
        return loaded

    async def _finished(self, response_id: str, principal: str | None,
                        seconds: float = _WAIT_SECONDS) -> ResponseRecord:
        """The record once its run has ended (awaiting the task here, else polling), or as
        it is after ``seconds``."""
        task = self._tasks.get(response_id)
        if task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), seconds)
        deadline = time.monotonic() + seconds
        while True:
            record, _ = await self.load(response_id, principal)
            if record.finished or time.monotonic() > deadline:
                return record
            await asyncio.sleep(0.05)  # the run is in another process; its record will say

    async def replay(self, response_id: str, principal: str | None, after: int
                     ) -> AsyncIterator[Event]:
        """Events numbered after ``after``: from the log of a finished response, or (while
        it runs) re-derived from the host's event log of the run, then live, then the rest."""
        record, _ = await self.load(response_id, principal)
        return self._replay(record, principal, after)

    async def _live(self, record: ResponseRecord, principal: str | None
                    ) -> AsyncIterator[Event]:
        """The running response's events, re-derived from the host's log of its run."""
        builder = EventBuilder(record.id)
        translator = RunTranslator(builder)
        derived = builder.start(lambda status: body_of(record, [], status))
        events = self.host.subscribe(record.conversation_id, principal=principal)
        try:
            async for event in events:
                if event.sequence == 1 and event.timestamp.isoformat() != record.run_started:
                    return  # another run of the conversation: this one is over
                derived.extend(translator.on_event(event))
                for out in derived:
                    yield out
                derived = []
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    async def _replay(self, record: ResponseRecord, principal: str | None, after: int
                      ) -> AsyncIterator[Event]:
        sent = after
        if not record.finished:
            async for out in self._live(record, principal):
                if out["sequence_number"] > sent:
                    sent = out["sequence_number"]
                    yield out
            record = await self._finished(record.id, principal, _FOLLOW_SECONDS)
        for out in record.events:
            if out["sequence_number"] > sent:
                sent = out["sequence_number"]
                yield out

    async def cancel(self, response_id: str, principal: str | None) -> dict[str, Any]:
        """Cancel a background response through ``Host.cancel``; its final Response."""
        record, version = await self.load(response_id, principal)
        if not record.background:
            raise ResponsesError(400, f"response {response_id!r} was not created with "
                                 "background=true; only background responses can be cancelled",
                                 param="response_id", code="not_cancellable")
        if record.finished:
            return body_of(record)
        running = await self.host.cancel(record.conversation_id, principal=principal)
        if running or response_id in self._tasks:
            await self._finished(response_id, principal)
            record, version = await self.load(response_id, principal)
        if not record.finished:
            # no run here that could finish it: its process died, or it runs elsewhere and
            # stops at that host's next lease renewal; either way it is cancelled from now on
            record.status, record.completed_at = "cancelled", int(time.time())
            with contextlib.suppress(SessionConflictError):
                await self.store.replace(record, version)
        return body_of(record)

    async def delete(self, response_id: str, principal: str | None) -> dict[str, Any]:
        """Forget the response (its conversation and snapshots stay)."""
        await self.load(response_id, principal)
        await self.store.delete(response_id, principal=principal)
        return {"id": response_id, "object": "response.deleted", "deleted": True}

    async def input_items(self, response_id: str, principal: str | None, *, after: str | None,
                          limit: int, order: str) -> dict[str, Any]:
        """The response's input items, a page at a time (``order`` ``asc`` or ``desc``)."""
        record, _ = await self.load(response_id, principal)
        items = list(record.input_items)
        if order == "desc":
            items.reverse()
        if after is not None:
            ids = [item["id"] for item in items]
            if after not in ids:
                raise ResponsesError(400, f"no input item {after!r} in response "
                                     f"{response_id!r}", param="after", code="invalid_value")
            items = items[ids.index(after) + 1:]
        page = items[:limit]
        return {"object": "list", "data": page,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
                "has_more": len(items) > limit}

