"""The stateless workflow engine: immutable definitions and run-scoped execution.

This module only re-exports. The engine depends on ``checkflow.checkpoints`` and the state
codec and must never import a storage backend, the agents or the hosts at import time.
"""

from checkflow.workflows._builder import WorkflowBuilder
from checkflow.workflows._context import WorkflowContext
from checkflow.workflows._edges import Case, Default
from checkflow.workflows._events import (
    ExecutorCompletedEvent,
    ExecutorFailedEvent,
    ExecutorInvokedEvent,
    OutputEvent,
    RequestCancelledEvent,
    RequestInfoEvent,
    SnapshotCommittedEvent,
    SuperstepCompletedEvent,
    SuperstepStartedEvent,
    WorkflowEvent,
    WorkflowFailedEvent,
    WorkflowStartedEvent,
    WorkflowStatusEvent,
)
from checkflow.workflows._executor import (
    Executor,
    FunctionExecutor,
    executor,
    handler,
    response_handler,
)
from checkflow.workflows._functional import FunctionalContext, step, workflow
from checkflow.workflows._inspect import (
    PendingRequestView,
    SnapshotView,
    inspect_shared_state,
    inspect_snapshot,
    pending_request_ids,
    same_shared_state,
)
from checkflow.workflows._interceptors import (
    CommitInfo,
    ExecutorInfo,
    Interceptor,
    RunInfo,
    SuperstepInfo,
    encoded_size,
)
from checkflow.workflows._nested import WorkflowExecutor
from checkflow.workflows._plan import ExecutionPlan
from checkflow.workflows._results import (
    PendingRequest,
    RequestCancelled,
    RunStatus,
    WorkflowRunResult,
)
from checkflow.workflows._schema import response_schema
from checkflow.workflows._stream import WorkflowRunStream
from checkflow.workflows._validation import convert_value, validation_detail
from checkflow.workflows._workflow import Workflow, set_agent_factory

__all__ = [
    "Case",
    "CommitInfo",
    "Default",
    "ExecutionPlan",
    "Executor",
    "ExecutorCompletedEvent",
    "ExecutorFailedEvent",
    "ExecutorInfo",
    "ExecutorInvokedEvent",
    "FunctionExecutor",
    "FunctionalContext",
    "Interceptor",
    "OutputEvent",
    "PendingRequest",
    "PendingRequestView",
    "RequestCancelled",
    "RequestCancelledEvent",
    "RequestInfoEvent",
    "RunInfo",
    "RunStatus",
    "SnapshotCommittedEvent",
    "SnapshotView",
    "SuperstepCompletedEvent",
    "SuperstepInfo",
    "SuperstepStartedEvent",
    "Workflow",
    "WorkflowBuilder",
    "WorkflowContext",
    "WorkflowEvent",
    "WorkflowExecutor",
    "WorkflowFailedEvent",
    "WorkflowRunResult",
    "WorkflowRunStream",
    "WorkflowStartedEvent",
    "WorkflowStatusEvent",
    "convert_value",
    "encoded_size",
    "executor",
    "handler",
    "inspect_shared_state",
    "inspect_snapshot",
    "pending_request_ids",
    "response_handler",
    "response_schema",
    "same_shared_state",
    "set_agent_factory",
    "step",
    "validation_detail",
    "workflow",
]
