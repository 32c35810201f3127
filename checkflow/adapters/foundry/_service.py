"""The Responses operations on a host: create (blocking, streamed, background), retrieve,
follow, cancel, delete and list input items.

A response is a hosted turn and nothing else: its id names the conversation and the turn
(``_ids``), what the protocol needs beside the checkpoint is the turn's recorded origin
(``_origin``), and every view of it (body, events, input items) is rendered from
``Host.find_turn`` (``_view``). No response record is written, before or after the commit;
the only record of this adapter is the tombstone ``DELETE`` leaves. A retry carries the
turn's idempotency key (``Idempotency-Key``, or ``previous_response_id`` with the call ids a
reply answers): a committed turn is replayed, a running one is followed (``Host.follow``)
to its end. This module must never build HTTP responses.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from checkflow.adapters.foundry._container import ContainerEnvironment
from checkflow.adapters.foundry._errors import ResponsesError
from checkflow.adapters.foundry._events import Event
from checkflow.adapters.foundry._ids import parse_response_id, response_id
from checkflow.adapters.foundry._objects import new_id
from checkflow.adapters.foundry._origin import PROTOCOL, ResponseOrigin, origin_of, turn_origin
from checkflow.adapters.foundry._plan import Plan, check_replies, not_latest, plan_response
from checkflow.adapters.foundry._view import ResponseView
from checkflow.adapters.foundry._wire import BRANCH_KEY, CreateRequest
from checkflow.errors import (
    ConversationNotFoundError,
    InvalidResponseError,
    RequestNotPendingError,
    SessionConflictError,
    SnapshotNotFoundError,
    StaleResumeTokenError,
    TurnInProgressError,
)
from checkflow.hosting import (
    Host,
    HostDescription,
    HostedRun,
    HostedRunResult,
    TurnRecord,
)
from checkflow.workflows import RunStatus

__all__ = ["NAMESPACE", "ResponsesService"]

_log = logging.getLogger("checkflow.adapters.foundry")
NAMESPACE = "foundry"
"""The ``host.records`` namespace of this adapter: only the tombstones of deleted responses."""
_SETTLE_SECONDS = 30.0  # how long a cancel or a follower waits for a turn's end to be recorded
_NO_RETRY = {"x-should-retry": "false"}  # a refusal the openai client must not retry


@dataclass(slots=True)
class _Started:
    """A response whose turn was started, replayed (``record``) or is running (``follow``)."""

    view: ResponseView
    run: HostedRun | None = None
    record: TurnRecord | None = None
    follow: str | None = None  # the running turn to follow: a retry's first attempt


def _record_of(run: HostedRun, result: HostedRunResult) -> TurnRecord:
    """The turn's record as the result carries it (one the host did not give is made up
    from the result: the same facts)."""
    if result.turn is not None:
        return result.turn
    state: Literal["committed", "failed", "cancelled"] = "committed"
    if result.status is RunStatus.CANCELLED:
        state = "cancelled"
    elif result.status is RunStatus.FAILED:
        state = "failed"
    return TurnRecord(run.turn_id, None, PROTOCOL, {}, state, result.status,
                      outputs=list(result.outputs),
                      pending_requests=dict(result.pending_requests),
                      error=None if result.error is None else str(result.error) or
                      type(result.error).__name__)


class ResponsesService:
    """The Responses protocol over one ``Host``; every method takes the request's principal."""

    def __init__(self, host: Host, container: ContainerEnvironment | None = None) -> None:
        self.host = host
        self.container = container  # None: not in a hosted-agent container
        self._tombstones = host.records(NAMESPACE)
        self._description: HostDescription | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def description(self) -> HostDescription:
        if self._description is None:
            self._description = await self.host.describe()
        return self._description

    # -- finding a response ------------------------------------------------------------------

    async def lookup(self, id: str, principal: str | None
                     ) -> tuple[ResponseView, TurnRecord] | None:
        """The stored response ``id`` and its turn, or ``None`` when this principal has none."""
        parsed = parse_response_id(id)
        if parsed is None:
            return None
        conversation_id, turn_id = parsed
        if await self._deleted(id, principal):
            return None
        try:
            record = await self.host.find_turn(conversation_id, turn_id=turn_id,
                                               principal=principal)
        except ConversationNotFoundError:
            return None

        origin = None if record is None else origin_of(record.protocol, record.data)
        if record is None or origin is None or not origin.store:
            return None
        return ResponseView(id, conversation_id, origin), record

    async def _deleted(self, id: str, principal: str | None) -> bool:
        return await self._tombstones.get(f"deleted:{id}", principal=principal) is not None

    async def load(self, id: str, principal: str | None) -> tuple[ResponseView, TurnRecord]:
        """The stored response, or a 404 naming it."""
        found = await self.lookup(id, principal)
        if found is None:
            raise ResponsesError(404, f"no response with id {id!r}", param="response_id",
                                 code="response_not_found")
        return found

    async def plan(self, request: CreateRequest, *, principal: str | None,
                   session_hint: str | None, key_header: str | None) -> Plan:
        """Resolve ``request`` (``ResponsesError`` for refusals that need stored state)."""

        async def find_previous(id: str) -> tuple[str, TurnRecord, ResponseOrigin] | None:
            found = await self.lookup(id, principal)
            if found is None:
                return None
            view, record = found
            return view.conversation_id, record, view.origin

        async def latest_turn(conversation_id: str) -> TurnRecord | None:
            try:
                turns = await self.host.turns(conversation_id, principal=principal)
            except ConversationNotFoundError:
                return None
            return turns[-1] if turns else None

        description = await self.description()
        agent = (None if self.container is None
                 else self.container.agent_reference(description.name))
        return await plan_response(request, description=description,
                                   principal=principal, find_previous=find_previous,
                                   latest_turn=latest_turn,
                                   is_deleted=lambda id: self._deleted(id, principal),
                                   session_hint=session_hint, key_header=key_header,
                                   agent_reference=agent, container=self.container is not None)

    # -- starting a turn ---------------------------------------------------------------------

    async def _start(self, plan: Plan) -> _Started:
        """Start the turn (``Host.run`` returns once the engine accepted the input, so a
        refusal is raised here with nothing committed); a retry replays or follows."""
        responses = plan.responses
        refused: dict[str, InvalidResponseError] = {}  # each call's first refused reading
        while True:
            try:
                run = await self.host.run(
                    plan.conversation_id, message=plan.message, responses=responses,
                    principal=plan.principal, from_snapshot=plan.from_snapshot,
                    resume_token=plan.resume_token, idempotency_key=plan.idempotency_key,
                    origin=turn_origin(plan.origin), shared_state=plan.shared_state,
                    stream=True)
                break
            except StaleResumeTokenError:  # another turn committed since the plan read it
                raise not_latest(plan.origin.previous_response_id,
                                 plan.conversation_id) from None
            except InvalidResponseError as exc:
                responses = await self._next_reading(plan, responses, exc, refused)
            except TurnInProgressError as exc:
                return await self._running(plan, exc.turn_id)
            except RequestNotPendingError:
                raise self._answered(plan, await self._answered_by(plan)) from None
            except SnapshotNotFoundError as exc:
                raise ResponsesError(
                    400, f"previous response {plan.origin.previous_response_id!r} can no "
                    f"longer be continued: its snapshot {exc.snapshot_id!r} is gone",
                    param="previous_response_id", code="previous_response_not_found") from None
        view = ResponseView(self._id(plan, run.turn_id), plan.conversation_id, plan.origin)
        if not run.replayed:
            return _Started(view, run=run)
        record = _record_of(run, await run.get_result())
        return _Started(self._same_request(plan, view, record), record=record)

    @staticmethod
    def _id(plan: Plan, turn_id: str) -> str:
        """The response's id: its turn's, or (``store: false``) an opaque one that nothing
        can retrieve or continue."""
        if not plan.origin.store:
            return new_id("resp")
        return response_id(plan.conversation_id, turn_id)

    async def _running(self, plan: Plan, turn_id: str) -> _Started:
        """A retry of a turn still running: follow it (its first attempt's response)."""
        record = await self.host.find_turn(plan.conversation_id, turn_id=turn_id,
                                           principal=plan.principal)
        view = ResponseView(self._id(plan, turn_id), plan.conversation_id, plan.origin)
        if record is None:
            return _Started(view, follow=turn_id)
        view = self._same_request(plan, view, record)  # another input under its key: 409
        if record.state != "running":
            return _Started(view, record=record)
        return _Started(view, follow=turn_id)

    def _same_request(self, plan: Plan, view: ResponseView, record: TurnRecord
                      ) -> ResponseView:
        """The recorded response of a retry; a different request under the same key is a
        409 (a late reply to an answered call, or a reused ``Idempotency-Key``)."""
        origin = origin_of(record.protocol, record.data)
        if origin is None or origin.input == plan.origin.input:
            return view if origin is None else ResponseView(view.response_id,
                                                            view.conversation_id, origin)
        if plan.keyed_by_header:
            raise ResponsesError(409, f"the Idempotency-Key of this request was used by "
                                 f"response {view.response_id!r} with another input; send a "
                                 "new key for a new request", param="input",
                                 code="idempotency_key_reused", headers=_NO_RETRY)
        raise self._answered(plan, view.response_id)

    def _answered(self, plan: Plan, by: str | None) -> ResponsesError:
        calls = ", ".join(plan.replies)
        previous = plan.origin.previous_response_id
        where = f"of response {previous!r}" if previous else \
            f"in conversation {plan.conversation_id!r}"
        answered = f" by response {by!r}" if by else ""
        return ResponsesError(
            409, f"call {calls} {where} was already answered{answered}; to answer it again, "
            f"branch from the response that asked it (metadata {{{BRANCH_KEY!r}: 'true'}})",
            param="input", code="already_answered", headers=_NO_RETRY)

    async def _next_reading(self, plan: Plan, responses: dict[str, Any] | None,
                            exc: InvalidResponseError,
                            refused: dict[str, InvalidResponseError]) -> dict[str, Any]:
        """The replies with the refused one's next reading (JSON, then the text as sent; a
        yes/no, then a tool approval); one that fits in no reading is a 400 naming its call
        and saying why its first reading was refused. A call never pending at the head is a
        400, naming the previous response's pending calls."""
        if exc.reason is None and exc.field is None:  # not pending at the head
            if plan.origin.previous_response_id is not None:
                await self._why_not_pending(plan)
            call = exc.request_id or ", ".join(plan.replies)
            raise ResponsesError(400, f"no pending call {call} in conversation "
                                 f"{plan.conversation_id} ({exc})", param="input",
                                 code="invalid_function_call_output")
        reply = plan.replies.get(exc.request_id or "")
        if responses is not None and reply is not None:
            first = refused.setdefault(reply.call_id, exc)
            tried = next(i for i, value in enumerate(reply.readings)
                         if value is responses[reply.call_id])
            if tried + 1 < len(reply.readings):
                return {**responses, reply.call_id: reply.readings[tried + 1]}
            what = ("the mcp_approval_response for call" if reply.approval
                    else "the output for call")
            raise ResponsesError(400, f"{what} {reply.call_id} does not fit the request: "
                                 f"{first}", param="input",
                                 code="invalid_function_call_output") from None
        call = exc.request_id or ", ".join(plan.replies)
        raise ResponsesError(400, f"the output for call {call} does not fit the request: {exc}",
                             param="input", code="invalid_function_call_output") from None

    async def _why_not_pending(self, plan: Plan) -> None:
        """A reply refused at the head: the previous response unknown (400), its calls not
        pending there (400), or (should the host not have said so) answered since (409)."""
        previous = plan.origin.previous_response_id
        assert previous is not None
        found = await self.lookup(previous, plan.principal)
        if found is None:
            raise ResponsesError(400, f"previous response {previous!r} not found",
                                 param="previous_response_id",
                                 code="previous_response_not_found")
        check_replies(list(plan.replies.values()), previous, found[1])
        raise self._answered(plan, await self._answered_by(plan))

    async def _answered_by(self, plan: Plan) -> str | None:
        """The response on the conversation's line that answered one of the plan's calls."""
        try:
            turns = await self.host.turns(plan.conversation_id, principal=plan.principal)
        except ConversationNotFoundError:
            return None
        for record in turns:
            origin = origin_of(record.protocol, record.data)
            if origin is not None and any(item.get("call_id") in plan.replies or item.get(
                    "approval_request_id") in plan.replies for item in origin.input):
                return response_id(plan.conversation_id, record.turn_id)
        return None

    # -- the events of a turn ----------------------------------------------------------------

    async def _read(self, view: ResponseView, run: HostedRun) -> AsyncIterator[Event]:
        """The events of a turn run here, as they happen, then its terminal event. A host
        error mid-run ends the response ``failed``; a reader that goes away closes the
        turn, which records it ``cancelled``."""
        live = view.live()
        for event in live.start():
            yield event
        try:
            async for workflow_event in run:
                for event in live.on_event(workflow_event):
                    yield event
            record = _record_of(run, await run.get_result())
        except Exception as exc:
            _log.exception("response %s: the run broke off", view.response_id)
            await run.aclose()
            record = TurnRecord(run.turn_id, None, PROTOCOL, {}, "failed", RunStatus.FAILED,
                                error=str(exc) or type(exc).__name__)
        except BaseException:
            await run.aclose()
            raise
        for event in live.finish(record):
            yield event

    async def _follow(self, view: ResponseView, turn_id: str, principal: str | None
                      ) -> AsyncIterator[Event]:
        """The events of a turn followed from here (its owner's log in its process, its
        committed snapshots elsewhere), then its terminal event."""
        live = view.live()
        for event in live.start():
            yield event
        follow = self.host.follow(view.conversation_id, turn_id=turn_id, principal=principal)
        try:
            async for workflow_event in follow:
                for event in live.on_event(workflow_event):
                    yield event
        finally:
            close = getattr(follow, "aclose", None)
            if close is not None:
                await close()
        record = await self._settled(view, turn_id, principal)
        for event in live.finish(record):
            yield event

    async def _settled(self, view: ResponseView, turn_id: str, principal: str | None,
                       seconds: float = _SETTLE_SECONDS) -> TurnRecord:
        """The turn's record once it no longer runs (bounded: after ``seconds`` it is
        reported ``failed``, saying so)."""
        deadline = time.monotonic() + seconds
        while True:
            record = await self.host.find_turn(view.conversation_id, turn_id=turn_id,
                                               principal=principal)
            if record is not None and record.state != "running":
                return record
            if time.monotonic() > deadline:
                return TurnRecord(turn_id, None, PROTOCOL, {}, "failed", RunStatus.FAILED,
                                  error=f"the turn was still running {seconds:.0f} s after "
                                  "it was followed to its end")
            await asyncio.sleep(0.1)  # each look is a session read and a checkpoint load

    def _events(self, started: _Started, principal: str | None) -> AsyncIterator[Event]:
        if started.run is not None:
            return self._read(started.view, started.run)
        if started.follow is not None:
            return self._follow(started.view, started.follow, principal)
        assert started.record is not None
        return _iterate(started.view.events_of(started.record))

    # -- creating ----------------------------------------------------------------------------

    async def create(self, plan: Plan) -> dict[str, Any]:
        """Run to the end and return the final Response (nothing streamed)."""
        started = await self._start(plan)
        if started.record is not None:
            return started.view.final_body(started.record)
        last: Event | None = None
        async for event in self._events(started, plan.principal):
            last = event
        assert last is not None
        body: dict[str, Any] = last["response"]
        return body

    async def create_stream(self, plan: Plan) -> AsyncIterator[Event]:
        """Start the turn (refusals raise here), then the response's events as they happen."""
        return self._events(await self._start(plan), plan.principal)

    async def create_background(self, plan: Plan) -> dict[str, Any]:
        """Start the turn and run it in a task of this object; the Response as it is now."""
        started = await self._start(plan)
        view = started.view
        if started.record is not None:
            return view.final_body(started.record)
        if started.follow is not None:
            return view.body("in_progress")
        run = started.run
        assert run is not None
        task = asyncio.create_task(self._drain(view, run), name=f"response {view.response_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return view.body("in_progress")

    async def _drain(self, view: ResponseView, run: HostedRun) -> None:
        try:
            await run.get_result()
        except Exception:
            _log.exception("background response %s failed", view.response_id)

    # -- reading, following, cancelling, deleting --------------------------------------------

    async def retrieve(self, id: str, principal: str | None) -> dict[str, Any]:
        view, record = await self.load(id, principal)
        return view.final_body(record)

    async def replay(self, id: str, principal: str | None, after: int
                     ) -> AsyncIterator[Event]:
        """Events numbered after ``after``: derived from the turn's record once it ended
        (at once, whatever ended it), else followed to its end."""
        view, record = await self.load(id, principal)
        if record.state == "running":
            events = self._follow(view, record.turn_id, principal)
        else:
            events = _iterate(view.events_of(record))
        return _after(events, after)

    async def cancel(self, id: str, principal: str | None) -> dict[str, Any]:
        """Cancel a background response through ``Host.cancel`` (noticed by its owner within
        the host's cancel poll when it runs in another process); its Response after."""
        view, record = await self.load(id, principal)
        if not view.origin.background:
            raise ResponsesError(400, f"response {id!r} was not created with background=true; "
                                 "only background responses can be cancelled",
                                 param="response_id", code="not_cancellable")
        if record.state != "running":
            return view.final_body(record)
        await self.host.cancel(view.conversation_id, principal=principal)
        return view.final_body(await self._settled(view, record.turn_id, principal))

    async def delete(self, id: str, principal: str | None) -> dict[str, Any]:
        """Forget the response (its conversation and snapshots stay): a tombstone."""
        await self.load(id, principal)
        try:
            await self._tombstones.put(f"deleted:{id}", {"deleted_at": int(time.time())},
                                       principal=principal, create=True)
        except SessionConflictError:  # deleted meanwhile
            raise ResponsesError(404, f"no response with id {id!r}", param="response_id",
                                 code="response_not_found") from None
        return {"id": id, "object": "response", "deleted": True}  # OpenAI's and Foundry's

    async def input_items(self, id: str, principal: str | None, *, after: str | None,
                          limit: int, order: str) -> dict[str, Any]:
        """The response's input items, a page at a time (``order`` ``asc`` or ``desc``)."""
        view, _ = await self.load(id, principal)
        items = view.input_items()
        if order == "desc":
            items.reverse()
        if after is not None:
            ids = [item["id"] for item in items]
            if after not in ids:
                raise ResponsesError(400, f"no input item {after!r} in response {id!r}",
                                     param="after", code="invalid_value")
            items = items[ids.index(after) + 1:]
        page = items[:limit]
        return {"object": "list", "data": page,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
                "has_more": len(items) > limit}


async def _iterate(events: Iterable[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event


async def _after(events: AsyncIterator[Event], after: int) -> AsyncIterator[Event]:
    try:
        async for event in events:
            if event["sequence_number"] > after:
                yield event
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
