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
# -- checkpoints (section owned by checkpoints) --
# -- storage (section owned by storage) --
# -- sessions (section owned by sessions) --
# -- workflows (section owned by the engine) --
# -- agents (section owned by agents) --
# -- hosting (section owned by hosting) --

__version__ = "0.1.0"

__all__ = [
    "AgentError",
    "AgentServiceError",
    "CheckflowError",
    "CheckpointConflictError",
    "CheckpointError",
    "CheckpointInUseError",
    "CheckpointNotFoundError",
    "CommitOutcomeUnknownError",
    "ConversationBusyError",
    "ConversationNotFoundError",
    "CorruptCheckpointError",
    "CorruptSessionError",
    "GraphSignatureMismatchError",
    "HostingError",
    "InvalidResponseError",
    "SessionConflictError",
    "SessionError",
    "SnapshotNotFoundError",
    "StaleResumeTokenError",
    "StateEncodingError",
    "StateError",
    "UnregisteredStateTypeError",
    "UnsupportedFormatVersionError",
    "WorkflowConvergenceError",
    "WorkflowError",
    "WorkflowRunError",
    "WorkflowValidationError",
    "__version__",
]
