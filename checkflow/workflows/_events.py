"""The events a run emits, streamed by ``run(stream=True)`` and listed on every result.

Events are plain, cheap records (slotted dataclasses): the runner emits several per
superstep, so they must never carry copies of state or do work when created. Every event a
run emits is stamped by the run as it is emitted: ``sequence`` (per run, strictly increasing
from 1) and ``timestamp`` (UTC), so a consumer that re-attaches (``Host.subscribe``) can ask
for what came after the last sequence it saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from checkflow.checkpoints import CheckpointSnapshot
    from checkflow.workflows._results import PendingRequest, RunStatus

__all__ = [
    "ExecutorCompletedEvent",
    "ExecutorFailedEvent",
    "ExecutorInvokedEvent",
    "OutputEvent",
    "RequestCancelledEvent",
    "RequestInfoEvent",
    "SnapshotCommittedEvent",
    "SuperstepCompletedEvent",
    "SuperstepStartedEvent",
    "WorkflowEvent",
    "WorkflowFailedEvent",
    "WorkflowStartedEvent",
    "WorkflowStatusEvent",
]


@dataclass(slots=True)
class WorkflowEvent:
    """Base class of every event; subclass it for custom events sent with ``ctx.add_event``.

    ``sequence`` and ``timestamp`` are set by the run when it emits the event (0, and the
    epoch, before that); they take no part in equality.
    """

    sequence: int = field(default=0, kw_only=True, compare=False)
    _time: float = field(default=0.0, kw_only=True, compare=False, repr=False)

    @property
    def timestamp(self) -> datetime:
        """When the run emitted the event, in UTC (stamped cheaply, shown as a datetime)."""
        return datetime.fromtimestamp(self._time, UTC)

    @timestamp.setter
    def timestamp(self, value: datetime) -> None:
        self._time = value.timestamp()


@dataclass(slots=True)
class WorkflowStartedEvent(WorkflowEvent):
    """A run began (after the graph signature check, before any superstep)."""

    checkpoint_id: str


@dataclass(slots=True)
class _SuperstepEvent(WorkflowEvent):
    superstep: int


@dataclass(slots=True)
class SuperstepStartedEvent(_SuperstepEvent):
    """Superstep ``superstep`` (the lifetime counter) is about to deliver its messages."""


@dataclass(slots=True)
class SuperstepCompletedEvent(_SuperstepEvent):
    """Every delivery of superstep ``superstep`` finished."""


@dataclass(slots=True)
class _ExecutorEvent(WorkflowEvent):
    executor_id: str
    superstep: int


@dataclass(slots=True)
class ExecutorInvokedEvent(_ExecutorEvent):
    """An executor is handling its deliveries of one superstep."""


@dataclass(slots=True)
class ExecutorCompletedEvent(_ExecutorEvent):
    """An executor finished handling its deliveries of one superstep."""


@dataclass(slots=True)
class ExecutorFailedEvent(_ExecutorEvent):
    """An executor raised; the run ends FAILED."""

    error: BaseException


@dataclass(slots=True)
class OutputEvent(WorkflowEvent):
    """An executor yielded a workflow output."""

    executor_id: str
    data: Any


@dataclass(slots=True)
class RequestInfoEvent(WorkflowEvent):
    """An executor parked a request for outside input (also re-reported on a bare resume)."""

    request: PendingRequest


@dataclass(slots=True)
class RequestCancelledEvent(WorkflowEvent):
    """A request was answered with ``RequestCancelled()``; ``delivered`` says whether a
    response handler accepted the cancellation or it was dropped."""

    request_id: str
    source_executor_id: str
    delivered: bool


@dataclass(slots=True)
class SnapshotCommittedEvent(WorkflowEvent):
    """A snapshot was committed to the checkpoint (``boundary``: ``input_accepted`` or
    ``superstep_completed``).

    ``snapshot`` is the committed snapshot itself (a reference, not a copy; ``None`` for an
    event made by hand), so a consumer can show what it holds (``inspect_shared_state``)
    without loading the checkpoint.
    """

    snapshot_id: str
    parent_snapshot_id: str | None
    boundary: str
    superstep: int
    _snapshot: CheckpointSnapshot | None = field(default=None, kw_only=True, compare=False,
                                                 repr=False)

    @property
    def snapshot(self) -> CheckpointSnapshot | None:
        """The committed snapshot (``None`` when the event was made without one)."""
        return self._snapshot


@dataclass(slots=True)
class WorkflowStatusEvent(WorkflowEvent):
    """The run's final (or current) status."""

    status: RunStatus


@dataclass(slots=True)
class WorkflowFailedEvent(WorkflowEvent):
    """The run failed; emitted before the error is raised."""

    error: BaseException
    executor_id: str | None = None
