"""``Turn``: one hosted workflow turn, from the engine's acceptance of its input to its end.

A turn wraps the engine's ``WorkflowRunStream``. The host makes it with the conversation
claimed (lease), loaded and marked (``Checkpoint.mark_turn``), and hands it out only after
``accept()``: the engine has committed the ``input_accepted`` snapshot, or refused the input
with its typed error, which ``accept()`` raises after releasing the conversation. Events read
ahead meanwhile are handed to the consumer first. It passes each event on (and into the run's
log, for followers), and when the run ends stores the conversation's session exactly once
through the host: a new good head, or the old one and the turn's outcome after a failure or
a cancel. It is the one place a hosted workflow turn shields its end from the caller's
cancellation. Closing it early, from the consumer or from ``Host.cancel`` in another task,
cancels the run between supersteps. This module must never decide what a session holds; the
host does.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Protocol

from checkflow._aio import shielded
from checkflow.errors import (
    CheckpointConflictError,
    CheckpointInUseError,
    ConversationBusyError,
    WorkflowConvergenceError,
    WorkflowRunError,
)
from checkflow.hosting._follow import outcome_events, replay
from checkflow.hosting._runs import ActiveRun, HostedRun
from checkflow.hosting._turns import TurnRecord
from checkflow.workflows import SnapshotCommittedEvent

if TYPE_CHECKING:
    from checkflow.checkpoints import Checkpoint
    from checkflow.hosting._keys import ConversationKey
    from checkflow.hosting._lease import ConversationLease
    from checkflow.hosting._results import HostedRunResult
    from checkflow.hosting._runs import RunRegistry
    from checkflow.workflows import WorkflowEvent


class TurnClaim(Protocol):
    """What a host prepared for a turn: the claimed conversation and the turn's identity."""

    key: ConversationKey
    lease: ConversationLease
    turn_id: str
    idempotency_key: str | None


class TurnEngine(Protocol):
    """What runs a turn: a workflow's ``WorkflowRunStream``, or an agent's ``AgentEngine``."""

    def __aiter__(self) -> AsyncIterator[WorkflowEvent]: ...
    async def __anext__(self) -> WorkflowEvent: ...
    async def drain(self, each: Callable[[WorkflowEvent], object]) -> None: ...
    async def get_result(self) -> Any: ...
    async def aclose(self) -> None: ...


class TurnHost(Protocol):
    """How a turn ends, which only its host knows (what its session then holds)."""

    _runs: RunRegistry

    async def _finish(self, prepared: Any, result: Any, error: BaseException | None
                      ) -> HostedRunResult: ...
    async def _abandon(self, prepared: Any, error: BaseException | None = None
                       ) -> HostedRunResult: ...
    async def _refused(self, prepared: Any, error: BaseException) -> None: ...

__all__ = ["FAILURES", "HostedRunStream", "ReplayedTurn", "Turn", "TurnClaim", "TurnEngine",
           "TurnHost", "is_conflict"]

FAILURES = (WorkflowRunError, WorkflowConvergenceError)
"""A run that failed in the workflow: a FAILED result, not an error of the host."""


class Turn(HostedRun):
    """A hosted turn in flight: iterate the workflow's events, then ``await get_result()``.

    ``turn_id`` (also ``run_id``) names it in the snapshots it commits and to followers;
    ``idempotency_key`` is the key it was run with. The conversation stays claimed until the
    stream is exhausted or ``aclose()``d; closing early (or ``Host.cancel``) cancels the run
    between supersteps; the result is then ``CANCELLED`` and the conversation keeps its last
    good head.
    """

    replayed = False

    def __init__(
        self,
        host: TurnHost,
        key: ConversationKey,
        prepared: TurnClaim,
        inner: TurnEngine,
        *,
        accepted: bool = False,
    ) -> None:
        self._host = host
        self._key = key
        self._prepared = prepared
        self._inner = inner
        self._ahead: collections.deque[WorkflowEvent] = collections.deque()
        self._ended_early = False  # the run ended while accept() read ahead
        self._accepted = accepted  # an engine that takes any input (an agent): nothing to await
        self._result: HostedRunResult | None = None
        self._error: BaseException | None = None
        self._done = asyncio.Event()
        self._finishing = False
        self._active: ActiveRun = host._runs.start(key, self.aclose, prepared.turn_id,
                                                   prepared.idempotency_key)
        checkpoint: Checkpoint | None = getattr(prepared, "checkpoint", None)
        self._active.mark, self._active.checkpoint = prepared.lease.turn, checkpoint
        self.turn_id = self.run_id = prepared.turn_id
        self.idempotency_key = prepared.idempotency_key
        prepared.lease.on_cancel = self.aclose

    @property
    def conversation_id(self) -> str:
        return self._key.conversation_id

    async def accept(self) -> None:
        """Read ahead until the engine accepted the input (or the run ended); raise its
        refusal as itself, the conversation released and nothing committed."""
        inner = self._inner
        if self._accepted:
            return
        try:
            while True:
                try:
                    event = await anext(inner)
                except StopAsyncIteration:
                    self._ended_early = True
                    return
                self._active.publish(event)
                self._ahead.append(event)
                if type(event) is SnapshotCommittedEvent:
                    return
        except FAILURES:
            self._ended_early = True  # failed in the workflow: get_result() reports it
        except BaseException as exc:
            self._finishing = True
            try:
                await shielded(self._refuse(exc))
            finally:
                self._end()
            if is_conflict(exc):
                raise ConversationBusyError(self._key.conversation_id) from exc
            raise

    async def _refuse(self, exc: BaseException) -> None:
        await self._inner.aclose()
        await self._host._refused(self._prepared, exc)

    def __aiter__(self) -> AsyncIterator[WorkflowEvent]:
        return self._events()

    async def _events(self) -> AsyncGenerator[WorkflowEvent, None]:
        """The events; at the end, the session is stored (shielded from the consumer's
        cancellation)."""
        exhausted = False
        try:
            ahead = self._ahead
            while ahead:
                yield ahead.popleft()
            if not self._ended_early:
                async for event in self._inner:
                    self._active.publish(event)
                    yield event
            exhausted = True
        except FAILURES:
            exhausted = True  # the failure is reported by get_result()
        finally:
            if exhausted and not self._finishing:
                await shielded(self._complete())
            elif not exhausted:
                await self.aclose()

    async def _complete(self) -> None:
        self._finishing = True
        host, prepared = self._host, self._prepared
        try:
            result = await self._inner.get_result()
        except FAILURES as exc:
            self._result = await host._finish(prepared, exc.result, exc)
        except BaseException as exc:
            await host._abandon(prepared, exc)
            self._error = ConversationBusyError(self._key.conversation_id) if is_conflict(
                exc) else exc
            if self._error is not exc:
                raise self._error from exc
            raise
        else:
            self._result = await host._finish(prepared, result, None)
        finally:
            self._end()

    async def _drain(self) -> None:
        """Run the rest of the stream; only ever awaited shielded, in a task of its own.

        ``_events`` without an iterator step per event: each is published as it is taken,
        the session stored at the end, and a run that stops early closes the stream."""
        self._ahead.clear()  # published by accept(); a drain hands nothing to a consumer
        if not self._ended_early:
            try:  # every event is read to the end: unpaced, no switch per event
                await self._inner.drain(self._active.publish)
            except FAILURES:
                pass  # the failure is reported by get_result()
            except BaseException:
                await self.aclose()
                raise
        if not self._finishing:
            await self._complete()

    async def get_result(self) -> HostedRunResult:
        """The run's outcome (runs the rest of the stream if it was not consumed)."""
        if not self._finishing:
            # A task of its own, started on the loop's next turn (not eagerly): the loop then
            # runs the drains of the requests it read together, one after another. Measured
            # with bench/hosting.py, that costs less CPU per conversation under load than
            # starting each drain (or its whole run) at once.
            await asyncio.shield(asyncio.ensure_future(self._drain()))
        await self._done.wait()
        if self._result is None:
            raise self._error or ConversationBusyError(self._key.conversation_id)
        return self._result

    async def aclose(self) -> None:
        """Stop the run (between supersteps) and release the conversation."""
        if self._finishing:
            await self._done.wait()
            return
        self._finishing = True
        try:
            await self._inner.aclose()
        finally:
            try:
                self._result = await shielded(self._host._abandon(self._prepared, None))
            finally:
                self._end()

    def _end(self) -> None:
        self._host._runs.end(self._active)
        self._done.set()


HostedRunStream = Turn
"""The name the workflow host's streamed turns had before ``Turn`` (kept)."""


class ReplayedTurn(HostedRun):
    """A retry of a committed turn (same idempotency key): its recorded outcome, run again
    by nothing. Its events tell the outcome (outputs, pending requests, status)."""

    replayed = True

    def __init__(self, result: HostedRunResult, record: TurnRecord) -> None:
        self._result = result
        self.record = record
        self.turn_id = self.run_id = record.turn_id
        self.idempotency_key = record.idempotency_key
        self.conversation_id = result.conversation_id

    async def accept(self) -> None:
        """Nothing to accept: the turn was accepted when it first ran."""

    def __aiter__(self) -> AsyncIterator[WorkflowEvent]:
        return replay(outcome_events(self.record))

    async def get_result(self) -> HostedRunResult:
        return self._result

    async def aclose(self) -> None:
        """Nothing runs."""


def is_conflict(exc: BaseException) -> bool:
    """Another run got the checkpoint first: for the client, the conversation was busy."""
    return isinstance(exc, (CheckpointConflictError, CheckpointInUseError))
