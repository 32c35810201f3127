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
# -- agents (section owned by agents) --
# isort: split
from checkflow.agents import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    ScriptedAgent,
    TextContent,
    UserInputRequestContent,
)

# -- hosting (section owned by hosting) --

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentError",
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentServiceError",
    "AgentSession",
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
    "FileCheckpointStorage",
    "FileSessionStore",
    "FunctionCallContent",
    "FunctionResultContent",
    "GraphSignatureMismatchError",
    "HostingError",
    "InMemoryCheckpointStorage",
    "InMemorySessionStore",
    "InvalidResponseError",
    "OpaqueValue",
    "ScriptedAgent",
    "SessionConflictError",
    "SessionError",
    "SessionStore",
    "SnapshotNotFoundError",
    "SnapshotRecord",
    "StaleResumeTokenError",
    "StateEncodingError",
    "StateError",
    "TextContent",
    "UnregisteredStateTypeError",
    "UnsupportedFormatVersionError",
    "UserInputRequestContent",
    "WorkflowConvergenceError",
    "WorkflowError",
    "WorkflowRunError",
    "WorkflowValidationError",
    "__version__",
    "active_run",
    "decode_for_inspection",
    "is_registered",
    "register_state_type",
]
