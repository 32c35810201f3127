"""What a run hands back: its status, outputs, pending requests and events.

Results are built once at the end of a run from the run's own records; they hold the
checkpoint that was used but never a reference into a Workflow or an executor.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checkflow.state import register_state_type

if TYPE_CHECKING:
    from checkflow.checkpoints import Checkpoint
    from checkflow.workflows._events import WorkflowEvent

__all__ = ["PendingRequest", "RequestCancelled", "RunStatus", "WorkflowRunResult"]


class RunStatus(enum.StrEnum):
    """Where a run stands; stored in ``workflow_state["status"]`` and ``metadata["status"]``."""

    RUNNING = "running"
    IDLE = "idle"
    AWAITING_RESPONSES = "awaiting_responses"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class RequestCancelled:
    """A valid answer to any request: withdraws it.

    It reaches a ``@response_handler`` only if that handler's response annotation accepts
    ``RequestCancelled``; otherwise the request is dropped with a ``RequestCancelledEvent``.
    """

    reason: str = ""


register_state_type(RequestCancelled, type_id="checkflow.RequestCancelled")


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request for outside input parked by ``ctx.request_info``.

    ``response_type`` is the type object itself (also after a reload in a fresh process).
    """

    request_id: str
    data: Any
    response_type: Any
    source_executor_id: str


@dataclass(slots=True)
class WorkflowRunResult:
    """The outcome of one ``run()`` call."""

    status: RunStatus
    checkpoint: Checkpoint
    pending_requests: Mapping[str, PendingRequest] = field(default_factory=dict)
    events: list[WorkflowEvent] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list, repr=False)

    def get_outputs(self) -> list[Any]:
        """The outputs THIS run yielded, in order (``messages.output`` keeps the lineage's)."""
        return list(self.outputs)
