"""checkflow: stateless agent workflows whose execution state lives in a caller-owned checkpoint.

This module only re-exports the public surface; the work lives in the subpackages.
"""

from checkflow.errors import (
    AgentError,
    AgentServiceError,
    CheckflowError,
    CheckpointConflictError,
    CheckpointError,
    CheckpointInUseError,
    CheckpointNotFoundError,
    CommitOutcomeUnknownError,
    ConversationBusyError,
    ConversationNotFoundError,
    CorruptCheckpointError,
    CorruptSessionError,
    GraphSignatureMismatchError,
    HostingError,
    InvalidResponseError,
    SessionConflictError,
    SessionError,
    SnapshotNotFoundError,
    StaleResumeTokenError,
    StateEncodingError,
    StateError,
    UnregisteredStateTypeError,
    UnsupportedFormatVersionError,
    WorkflowConvergenceError,
    WorkflowError,
    WorkflowRunError,
    WorkflowValidationError,
)

# -- state (section owned by the state codec) --
from checkflow.state import (
    OpaqueValue,
    decode_for_inspection,
    is_registered,
    register_state_type,
)

# -- checkpoints (section owned by checkpoints) --
# isort: split
from checkflow.checkpoints import (
    Checkpoint,
    CheckpointReference,
    CheckpointSnapshot,
    CheckpointStorage,
    SnapshotRecord,
    active_run,
)

# -- storage (section owned by storage) --
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage

# -- sessions (section owned by sessions) --
# isort: split
from checkflow.sessions import AgentSession, FileSessionStore, InMemorySessionStore, SessionStore

# -- workflows (section owned by the engine) --
# isort: split
from checkflow.workflows import (
    Case,
    Default,
    Executor,
    ExecutorCompletedEvent,
    ExecutorFailedEvent,
    ExecutorInvokedEvent,
    FunctionalContext,
    OutputEvent,
    PendingRequest,
    RequestCancelled,
    RequestCancelledEvent,
    RequestInfoEvent,
    RunStatus,
    SnapshotCommittedEvent,
    SuperstepCompletedEvent,
    SuperstepStartedEvent,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowEvent,
    WorkflowExecutor,
    WorkflowFailedEvent,
    WorkflowRunResult,
    WorkflowRunStream,
    WorkflowStartedEvent,
    WorkflowStatusEvent,
    executor,
    handler,
    response_handler,
    step,
    workflow,
)

# -- agents (section owned by agents) --
# isort: split
from checkflow.agents import (
    Agent,
    AgentExecutor,
    AgentExecutorRequest,
    AgentResponse,
    AgentResponseUpdate,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    ScriptedAgent,
    TextContent,
    UserInputRequestContent,
    WorkflowAgent,
)

# -- hosting (section owned by hosting) --
# isort: split
from checkflow.errors import InvalidMessageError
from checkflow.hosting import (
    Adapter,
    AgentHost,
    HostedRunResult,
    ResumeToken,
    WorkflowHost,
    create_app,
)

__version__ = "0.1.0"

__all__ = [
    "Adapter",
    "Agent",
    "AgentError",
    "AgentExecutor",
    "AgentExecutorRequest",
    "AgentHost",
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentServiceError",
    "AgentSession",
    "Case",
    "ChatMessage",
    "CheckflowError",
    "Checkpoint",
    "CheckpointConflictError",
    "CheckpointError",
    "CheckpointInUseError",
    "CheckpointNotFoundError",
    "CheckpointReference",
    "CheckpointSnapshot",
    "CheckpointStorage",
    "CommitOutcomeUnknownError",
    "ConversationBusyError",
    "ConversationNotFoundError",
    "CorruptCheckpointError",
    "CorruptSessionError",
    "Default",
    "Executor",
    "ExecutorCompletedEvent",
    "ExecutorFailedEvent",
    "ExecutorInvokedEvent",
    "FileCheckpointStorage",
    "FileSessionStore",
    "FunctionCallContent",
    "FunctionResultContent",
    "FunctionalContext",
    "GraphSignatureMismatchError",
    "HostedRunResult",
    "HostingError",
    "InMemoryCheckpointStorage",
    "InMemorySessionStore",
    "InvalidMessageError",
    "InvalidResponseError",
    "OpaqueValue",
    "OutputEvent",
    "PendingRequest",
    "RequestCancelled",
    "RequestCancelledEvent",
    "RequestInfoEvent",
    "ResumeToken",
    "RunStatus",
    "ScriptedAgent",
    "SessionConflictError",
    "SessionError",
    "SessionStore",
    "SnapshotCommittedEvent",
    "SnapshotNotFoundError",
    "SnapshotRecord",
    "StaleResumeTokenError",
    "StateEncodingError",
    "StateError",
    "SuperstepCompletedEvent",
    "SuperstepStartedEvent",
    "TextContent",
    "UnregisteredStateTypeError",
    "UnsupportedFormatVersionError",
    "UserInputRequestContent",
    "Workflow",
    "WorkflowAgent",
    "WorkflowBuilder",
    "WorkflowContext",
    "WorkflowConvergenceError",
    "WorkflowError",
    "WorkflowEvent",
    "WorkflowExecutor",
    "WorkflowFailedEvent",
    "WorkflowHost",
    "WorkflowRunError",
    "WorkflowRunResult",
    "WorkflowRunStream",
    "WorkflowStartedEvent",
    "WorkflowStatusEvent",
    "WorkflowValidationError",
    "__version__",
    "active_run",
    "create_app",
    "decode_for_inspection",
    "executor",
    "handler",
    "is_registered",
    "register_state_type",
    "response_handler",
    "step",
    "workflow",
]
