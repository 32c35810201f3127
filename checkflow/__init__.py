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
    "OpaqueValue",
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
    "decode_for_inspection",
    "is_registered",
    "register_state_type",
]
