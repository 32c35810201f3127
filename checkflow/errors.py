"""Every error checkflow raises on purpose, in one hierarchy.

Catch ``CheckflowError`` to catch them all, or a branch to catch one family::

    CheckflowError
    ├── StateError                          the state codec
    │   ├── UnregisteredStateTypeError      a value (or a type id) not in the registry
    │   └── StateEncodingError              a value the codec refuses (NaN, non-str dict key, ...)
    │       └── StateNestingError           nested deeper than the codec's limit (or cyclic)
    ├── CheckpointError                     checkpoints and their storage
    │   ├── CheckpointConflictError         another writer advanced the persisted head
    │   │   └── CheckpointExistsError       a new checkpoint over an id the storage already has
    │   ├── CheckpointNotFoundError         no checkpoint with that id in the storage
    │   ├── SnapshotNotFoundError           no snapshot with that id in the checkpoint
    │   ├── CheckpointInUseError            a run is active on this checkpoint
    │   ├── CommitOutcomeUnknownError       a remote commit may or may not have landed
    │   ├── CorruptCheckpointError          bytes that are not a valid checkpoint or snapshot
    │   │   └── CheckpointLostError         storage no longer has a head a caller acknowledged
    │   ├── StateTooLargeError              a state larger than the checkpoint's limit
    │   └── UnsupportedFormatVersionError   an envelope of an unknown format or version
    ├── WorkflowError                       building and running workflows
    │   ├── WorkflowValidationError         build() refused the graph
    │   ├── WorkflowRunError                an executor raised; the run ended FAILED
    │   ├── WorkflowConvergenceError        max_iterations supersteps without going idle
    │   ├── GraphSignatureMismatchError     the checkpoint belongs to another graph
    │   ├── InvalidResponseError            a response for an unknown request or of the wrong type
    │   └── InterceptorError                an interceptor raised (or skipped call_next)
    ├── StorageError                        the storage medium failed (file system, database)
    │   ├── StorageUnavailableError         cannot be reached or read right now
    │   ├── StorageFullError                no space left (ENOSPC, EDQUOT)
    │   └── StorageReadOnlyError            mounted read-only (EROFS): reads still work
    ├── SessionError                        agent sessions and their stores
    │   ├── SessionConflictError            a stale expected_version
    │   └── CorruptSessionError             a stored session that cannot be decoded
    ├── AgentError                          agents
    │   ├── AgentServiceError               the model service answered with an error status
    │   ├── ToolArgumentsError              a tool call's arguments do not fit its parameters
    │   └── MaxToolRoundsError              the model kept calling tools past max_tool_rounds
    ├── MigrationError                      the offline v1 migration (checkflow.migrate)
    │   └── V1TypeRefusedError              a pickled v1 value of a type nobody admitted
    └── HostingError                        the hosting layer
        ├── ConversationBusyError           the conversation is running elsewhere (HTTP 409)
        │   └── TurnInProgressError         a retry (same idempotency key) of a running turn
        ├── RequestNotPendingError          an answer to a request already answered (HTTP 409)
        ├── ConversationNotFoundError       unknown to this principal (HTTP 404)
        ├── InvalidMessageError             a message fits no input type of the start (HTTP 422)
        ├── SharedStateWriteError           a client's shared-state write refused (HTTP 422)
        ├── StaleResumeTokenError           the resume token no longer names the head (HTTP 409)
        ├── NoCheckpointsError              this host keeps no checkpoints (an AgentHost)
        ├── InvalidConversationIdError      empty, too long, or not valid UTF-8 (HTTP 400/414)
        ├── ConversationLimitError          a per-conversation limit was reached (HTTP 409)
        ├── RecordTooLargeError             an adapter's record would pass its size bound (409)
        └── AdapterConflictError            two adapters (or one and the native API) share a path

Errors carry the facts needed to act on them as attributes and say them in one sentence.
This module must never import anything else from checkflow.
"""

from __future__ import annotations

import errno as _errno
from typing import Any

__all__ = [
    "AdapterConflictError",
    "AgentError",
    "AgentServiceError",
    "CheckflowError",
    "CheckpointConflictError",
    "CheckpointError",
    "CheckpointExistsError",
    "CheckpointInUseError",
    "CheckpointLostError",
    "CheckpointNotFoundError",
    "CommitOutcomeUnknownError",
    "ConversationBusyError",
    "ConversationLimitError",
    "ConversationNotFoundError",
    "CorruptCheckpointError",
    "CorruptSessionError",
    "GraphSignatureMismatchError",
    "HostingError",
    "InterceptorError",
    "InvalidConversationIdError",
    "InvalidMessageError",
    "InvalidResponseError",
    "MaxToolRoundsError",
    "MigrationError",
    "NoCheckpointsError",
    "RecordTooLargeError",
    "RequestNotPendingError",
    "SessionConflictError",
    "SessionError",
    "SharedStateWriteError",
    "SnapshotNotFoundError",
    "StaleResumeTokenError",
    "StateEncodingError",
    "StateError",
    "StateNestingError",
    "StateTooLargeError",
    "StorageError",
    "StorageFullError",
    "StorageReadOnlyError",
    "StorageUnavailableError",
    "ToolArgumentsError",
    "TurnInProgressError",
    "UnregisteredStateTypeError",
    "UnsupportedFormatVersionError",
    "V1TypeRefusedError",
    "WorkflowConvergenceError",
    "WorkflowError",
    "WorkflowRunError",
    "WorkflowValidationError",
]


class CheckflowError(Exception):
    """The root of every error checkflow raises on purpose."""


# -- state codec ---------------------------------------------------------------------------


class StateError(CheckflowError):
    """The state codec could not encode or decode a value."""


class UnregisteredStateTypeError(StateError, TypeError):
    """A value's type (when encoding) or a type id (when decoding) is not registered.

    ``path`` is where in the state the value sits, e.g. ``executor_states.reviewer.notes[3]``;
    ``type_name`` is the Python type's qualified name or the unknown type id.
    """

    def __init__(self, message: str, *, path: str = "", type_name: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.type_name = type_name


class StateEncodingError(StateError, ValueError):
    """A value the codec refuses by design: a non-finite float, a non-str dict key, ..."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class StateNestingError(StateEncodingError):
    """A value nested deeper than the codec's limit (``limit`` levels), or containing itself.

    Depth counts containers in the encoded form (a tagged value such as a tuple or a
    registered type adds one level); see ``checkflow.state.set_max_nesting_depth``.
    """

    def __init__(self, message: str, *, path: str = "", limit: int | None = None) -> None:
        super().__init__(message, path=path)
        self.limit = limit


# -- checkpoints and storage ---------------------------------------------------------------


class CheckpointError(CheckflowError):
    """Something about a checkpoint, its snapshots or its storage."""


class CheckpointConflictError(CheckpointError):
    """The persisted head is not the one this writer expected: another writer moved it.

    Call ``await checkpoint.refresh()`` to reload the persisted state, then decide again.
    ``cause`` (when given) replaces the generic last clause with what is known of the head
    the storage has: when and how it was written, and by whom when that can be told.
    """

    def __init__(
        self,
        checkpoint_id: str,
        *,
        expected_head_snapshot_id: str | None,
        actual_head_snapshot_id: str | None,
        cause: str | None = None,
    ) -> None:
        super().__init__(
            f"checkpoint {checkpoint_id!r}: expected persisted head "
            f"{expected_head_snapshot_id!r} but storage has {actual_head_snapshot_id!r}; "
            + (cause or "another writer committed first (refresh() and retry)")
        )
        self.checkpoint_id = checkpoint_id
        self.expected_head_snapshot_id = expected_head_snapshot_id
        self.actual_head_snapshot_id = actual_head_snapshot_id


class CheckpointExistsError(CheckpointConflictError):
    """A new checkpoint was created with an id the storage already holds.

    Nothing was written. Either continue what is there (``await storage.load(id)``) or create
    the checkpoint with another id (or none: a fresh one is generated). ``written`` says what
    is known of the stored head (for example when an earlier run committed it).
    """

    def __init__(
        self,
        checkpoint_id: str,
        *,
        actual_head_snapshot_id: str | None,
        written: str | None = None,
    ) -> None:
        CheckpointError.__init__(
            self,
            f"checkpoint {checkpoint_id!r} already exists in this storage"
            + _facts([f"head {actual_head_snapshot_id!r}" if actual_head_snapshot_id else "",
                      written or ""])
            + ", and a new checkpoint cannot be created over it: to continue it, load it "
            f"(checkpoint = await storage.load({checkpoint_id!r})); to start again, create "
            "the checkpoint with another checkpoint_id (or none, for a generated one)",
        )
        self.checkpoint_id = checkpoint_id
        self.expected_head_snapshot_id = None
        self.actual_head_snapshot_id = actual_head_snapshot_id


def _facts(facts: list[str]) -> str:
    """`` (a, b)`` of the facts that are known, or nothing."""
    known = [f for f in facts if f]
    return f" ({', '.join(known)})" if known else ""


class CheckpointNotFoundError(CheckpointError, LookupError):
    """The storage has no checkpoint with this id."""

    def __init__(self, checkpoint_id: str) -> None:
        super().__init__(f"no checkpoint with id {checkpoint_id!r} in this storage")
        self.checkpoint_id = checkpoint_id


class SnapshotNotFoundError(CheckpointError, LookupError):
    """The checkpoint has no snapshot with this id."""

    def __init__(self, checkpoint_id: str, snapshot_id: str) -> None:
        super().__init__(f"checkpoint {checkpoint_id!r} has no snapshot {snapshot_id!r}")
        self.checkpoint_id = checkpoint_id
        self.snapshot_id = snapshot_id


class CheckpointInUseError(CheckpointError):
    """A run is active on this checkpoint; a second run, restart or commit must wait."""

    def __init__(self, checkpoint_id: str, action: str = "run") -> None:
        super().__init__(
            f"checkpoint {checkpoint_id!r} has an active run; cannot {action} it until "
            "that run ends"
        )
        self.checkpoint_id = checkpoint_id
        self.action = action


class CommitOutcomeUnknownError(CheckpointError):
    """A remote commit may or may not have landed; ``refresh()`` the checkpoint to find out."""

    def __init__(self, checkpoint_id: str, snapshot_id: str, detail: str = "") -> None:
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"checkpoint {checkpoint_id!r}: the outcome of committing snapshot "
            f"{snapshot_id!r} is unknown{extra}; call refresh() before continuing"
        )
        self.checkpoint_id = checkpoint_id
        self.snapshot_id = snapshot_id


class CorruptCheckpointError(CheckpointError):
    """Stored bytes are not a valid checkpoint or snapshot; ``source`` names where they were."""

    def __init__(self, message: str, *, source: str = "") -> None:
        super().__init__(f"{source}: {message}" if source else message)
        self.source = source


class CheckpointLostError(CorruptCheckpointError):
    """Storage no longer has the head a caller acknowledged (and no prune removed it).

    ``expected_head_snapshot_id`` is the head the caller knows was committed (e.g. a
    session's ``CheckpointReference``); ``actual_head_snapshot_id`` is what storage has now
    (``None``: the checkpoint itself is gone).
    """

    def __init__(
        self,
        checkpoint_id: str,
        *,
        expected_head_snapshot_id: str | None,
        actual_head_snapshot_id: str | None,
        source: str = "",
    ) -> None:
        super().__init__(
            f"checkpoint {checkpoint_id!r} lost acknowledged head "
            f"{expected_head_snapshot_id!r}: storage has {actual_head_snapshot_id!r} and no "
            "prune removed it",
            source=source,
        )
        self.checkpoint_id = checkpoint_id
        self.expected_head_snapshot_id = expected_head_snapshot_id
        self.actual_head_snapshot_id = actual_head_snapshot_id


class UnsupportedFormatVersionError(CheckpointError):
    """An envelope names a format or version this release cannot read."""

    def __init__(self, message: str, *, format: Any = None, version: Any = None) -> None:
        super().__init__(message)
        self.format = format
        self.version = version

    @classmethod
    def unreadable(
        cls, source: str, what: str, *, format: Any, version: Any, reads: tuple[str, int]
    ) -> UnsupportedFormatVersionError:
        """The error for a ``what`` (envelope, log, item) whose (format, version) is not ``reads``.

        One wording for every persisted layout, so each names where it was read, what it
        found and what this release reads.
        """
        return cls(
            f"{source}: {what} of kind {format!r} version {version!r} is not readable; this "
            f"release reads {reads[0]!r} version {reads[1]}",
            format=format,
            version=version,
        )


# -- workflows -----------------------------------------------------------------------------


class WorkflowError(CheckflowError):
    """Building or running a workflow failed."""


class WorkflowValidationError(WorkflowError, ValueError):
    """``WorkflowBuilder.build()`` refused the graph; the message says exactly why."""


class WorkflowRunError(WorkflowError):
    """An executor raised; the run ended FAILED. The original is ``__cause__``.

    ``result`` is the failed run's ``WorkflowRunResult`` (status, events, checkpoint).
    """

    def __init__(self, message: str, *, executor_id: str | None = None, result: Any = None):
        super().__init__(message)
        self.executor_id = executor_id
        self.result = result


class WorkflowConvergenceError(WorkflowError):
    """A run exceeded ``max_iterations`` supersteps without going idle or pausing."""

    def __init__(self, max_iterations: int, *, result: Any = None) -> None:
        super().__init__(
            f"workflow did not converge within max_iterations={max_iterations} supersteps"
        )
        self.max_iterations = max_iterations
        self.result = result


class GraphSignatureMismatchError(WorkflowError):
    """The checkpoint was made by a workflow with another graph; nothing was restored."""

    def __init__(self, *, expected: str, actual: str, checkpoint_id: str = "") -> None:
        super().__init__(
            f"checkpoint {checkpoint_id!r} has graph signature {actual!r} but this workflow's "
            f"is {expected!r}; refusing to restore it into a different graph"
        )
        self.expected = expected
        self.actual = actual
        self.checkpoint_id = checkpoint_id


class InvalidResponseError(WorkflowError, ValueError):
    """A response names an unknown request id or does not fit the request's response type."""

    def __init__(self, message: str, *, request_id: str = "", field: str | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id
        self.field = field  # the JSON path that did not fit (``$.quantity``), when known
        self.reason = reason


class InterceptorError(WorkflowError):
    """An interceptor raised, or returned without calling ``call_next``; the run stopped.

    Nothing half-done is committed: the checkpoint keeps its last committed snapshot. The
    interceptor's own error is ``__cause__``.
    """

    def __init__(self, interceptor: str, hook: str, error: BaseException) -> None:
        super().__init__(
            f"interceptor {interceptor} failed in its {hook!r} hook: "
            f"{type(error).__name__}: {error}")
        self.interceptor = interceptor
        self.hook = hook
        self.error = error


class StateTooLargeError(CheckpointError):
    """A commit's encoded state is larger than the checkpoint's ``max_state_bytes``.

    Nothing was committed; ``size`` and ``limit`` are in bytes.
    """

    def __init__(self, checkpoint_id: str, *, size: int, limit: int) -> None:
        super().__init__(
            f"checkpoint {checkpoint_id!r}: the state to commit is {size} bytes encoded, over "
            f"the limit of {limit}")
        self.checkpoint_id = checkpoint_id
        self.size = size
        self.limit = limit


# -- storage faults ------------------------------------------------------------------------


class StorageError(CheckflowError):
    """The storage medium failed: nothing was changed by the failing call.

    ``operation`` says what was attempted (``"commit"``, ``"read"``, ...), ``resource`` the
    file or item, ``errno`` the OS error number when there is one. Checkpoint storages and
    session stores raise the subclasses; build one from an ``OSError`` with ``from_os_error``.
    """

    def __init__(
        self, message: str, *, operation: str = "", resource: str = "", errno: int | None = None
    ) -> None:
        super().__init__(message)
        self.operation = operation
        self.resource = resource
        self.errno = errno

    @classmethod
    def from_os_error(cls, exc: OSError, *, operation: str, resource: str) -> StorageError:
        """The typed fault for ``exc``: full (ENOSPC, EFBIG, EDQUOT), read-only (EROFS), else
        unavailable."""
        code = exc.errno
        kind: type[StorageError]
        if code in _FULL_ERRNOS:
            kind, what = StorageFullError, "the storage is full"
        elif code == _errno.EROFS:
            kind, what = StorageReadOnlyError, "the storage is read-only"
        else:
            kind, what = StorageUnavailableError, "the storage is unavailable"
        reason = exc.strerror or type(exc).__name__
        return kind(
            f"{operation} failed on {resource}: {what} ({reason})",
            operation=operation,
            resource=resource,
            errno=code,
        )


class StorageUnavailableError(StorageError):
    """The storage cannot be reached, read or written right now (I/O error, permissions...)."""


class StorageFullError(StorageError):
    """No space left (``ENOSPC``), a quota used up (``EDQUOT``) or a file size limit (``EFBIG``)."""


class StorageReadOnlyError(StorageError):
    """The storage is read-only (``EROFS``): reads still work, writes cannot."""


_FULL_ERRNOS = frozenset(
    code
    for code in (_errno.ENOSPC, _errno.EFBIG, getattr(_errno, "EDQUOT", None))
    if code is not None
)


# -- sessions ------------------------------------------------------------------------------


class SessionError(CheckflowError):
    """Storing or loading an agent session failed."""


class SessionConflictError(SessionError):
    """``SessionStore.set`` was given an ``expected_version`` that is no longer current."""

    def __init__(
        self, session_id: str, *, expected_version: str | None, actual_version: str | None
    ) -> None:
        super().__init__(
            f"session {session_id!r}: expected version {expected_version!r} but the store "
            f"has {actual_version!r}"
        )
        self.session_id = session_id
        self.expected_version = expected_version
        self.actual_version = actual_version


class CorruptSessionError(SessionError):
    """A stored session cannot be decoded; ``source`` names the file or item."""

    def __init__(self, message: str, *, source: str = "") -> None:
        super().__init__(f"{source}: {message}" if source else message)
        self.source = source


# -- agents --------------------------------------------------------------------------------


class AgentError(CheckflowError):
    """An agent could not produce a response."""


class AgentServiceError(AgentError):
    """The model service answered with an error; ``status_code`` is its HTTP status."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ToolArgumentsError(AgentError, ValueError):
    """A tool call's arguments do not fit the tool's parameters; ``reason`` says where.

    The tool loop hands the message back to the model; an edited approval raises it to the
    person who answered.
    """

    def __init__(self, tool_name: str, reason: str) -> None:
        super().__init__(f"invalid arguments for tool {tool_name!r}: {reason}")
        self.tool_name = tool_name
        self.reason = reason


class MaxToolRoundsError(AgentError):
    """The model still called tools after ``max_tool_rounds`` rounds and a last request
    that offered it none (``tool_choice="none"``)."""

    def __init__(self, max_tool_rounds: int, tool_names: list[str]) -> None:
        super().__init__(
            f"the model kept calling tools ({', '.join(tool_names)}) after "
            f"max_tool_rounds={max_tool_rounds}; raise the limit or change the instructions")
        self.max_tool_rounds = max_tool_rounds
        self.tool_names = tool_names


# -- the v1 migration ----------------------------------------------------------------------


class MigrationError(CheckflowError):
    """The offline v1 migration could not read or convert a v1 checkpoint."""


class V1TypeRefusedError(MigrationError, TypeError):
    """A v1 file holds a pickled value of a type that is neither a builtin value type nor
    admitted with ``--allow-type``; nothing of it was unpickled.

    ``type_name`` is the refused ``module:qualname``; ``file`` the v1 file that holds it.
    """

    def __init__(self, type_name: str, file: str) -> None:
        super().__init__(
            f"{file}: refusing to unpickle {type_name!r}: only builtin value types and the "
            f"types named with --allow-type are admitted (--allow-type {type_name})")
        self.type_name = type_name
        self.file = file


# -- hosting -------------------------------------------------------------------------------


class HostingError(CheckflowError):
    """A hosted conversation could not be served."""


class ConversationBusyError(HostingError):
    """The conversation already has a run in progress (HTTP 409 with ``Retry-After``)."""

    def __init__(self, conversation_id: str, *, retry_after: float = 1.0,
                 owner: str | None = None) -> None:
        held = f" (leased by {owner})" if owner else ""
        super().__init__(f"conversation {conversation_id!r} is busy with another run{held}")
        self.conversation_id = conversation_id
        self.retry_after = retry_after
        self.owner = owner


class TurnInProgressError(ConversationBusyError):
    """A retry of a turn that is still running: the same idempotency key (HTTP 409 with
    ``Retry-After``). ``turn_id`` names the running turn, which ``Host.follow`` follows."""

    def __init__(self, conversation_id: str, turn_id: str, *, idempotency_key: str,
                 retry_after: float = 1.0) -> None:
        super().__init__(conversation_id, retry_after=retry_after)
        self.args = (f"conversation {conversation_id!r} is still running turn {turn_id!r} "
                     f"of idempotency key {idempotency_key!r}; follow it or retry later",)
        self.turn_id = turn_id
        self.idempotency_key = idempotency_key


class RequestNotPendingError(HostingError):
    """An answer to a request that an earlier turn already answered (HTTP 409
    ``already_answered``): never taken as a silent fork; to branch from the pause, say so
    (``from_snapshot``). ``request_ids`` are the answered ones."""

    def __init__(self, conversation_id: str, request_ids: list[str]) -> None:
        super().__init__(
            f"conversation {conversation_id!r}: request(s) {', '.join(map(repr, request_ids))} "
            "were already answered; branch from the paused snapshot to answer again")
        self.conversation_id = conversation_id
        self.request_ids = list(request_ids)


class ConversationNotFoundError(HostingError, LookupError):
    """No such conversation for this principal (HTTP 404, never 403)."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"no conversation {conversation_id!r}")
        self.conversation_id = conversation_id


class InvalidMessageError(HostingError, ValueError):
    """A message fits none of the start executor's input types (HTTP 422).

    ``accepted_types`` names the types tried, most specific first.
    """

    def __init__(self, message: str, *, accepted_types: list[str] | None = None,
                 field: str | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.accepted_types = list(accepted_types or [])
        self.field = field  # where the closest type did not fit (``$.quantity``), when known
        self.reason = reason


class SharedStateWriteError(HostingError, ValueError):
    """A client's write of the shared state is refused, nothing run or committed (HTTP 422).

    ``key`` is the shared-state key; ``reason`` why: the key is not one the client may
    write, or the value does not fit the key's declared type (``field`` then says where).
    """

    def __init__(self, key: str, reason: str, *, field: str | None = None) -> None:
        where = f" (at {field})" if field else ""
        super().__init__(f"shared state key {key!r} cannot be written: {reason}{where}")
        self.key = key
        self.reason = reason
        self.field = field


class StaleResumeTokenError(HostingError):
    """The resume token no longer names the checkpoint's head (HTTP 409)."""

    def __init__(self, *, expected: Any, actual: Any) -> None:
        super().__init__(f"stale resume token: it names {expected!r} but the head is {actual!r}")
        self.expected = expected
        self.actual = actual


class NoCheckpointsError(HostingError):
    """The host keeps no checkpoints (an ``AgentHost``): there are no snapshots to show."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(
            f"conversation {conversation_id!r} is served by an agent host, which keeps an agent "
            "session, not checkpoints")
        self.conversation_id = conversation_id


class AdapterConflictError(HostingError, ValueError):
    """Two adapters, or an adapter and the native API, claim overlapping path prefixes."""

    def __init__(self, first: str, second: str, detail: str) -> None:
        super().__init__(f"{first} and {second} overlap: {detail}")
        self.first = first
        self.second = second


class InvalidConversationIdError(HostingError, ValueError):
    """A conversation id that cannot name a conversation: empty, too long or not UTF-8.

    ``too_long`` is set when only its length is the problem (HTTP 414; else 400).
    """

    def __init__(self, reason: str, *, too_long: bool = False) -> None:
        super().__init__(f"invalid conversation id: {reason}")
        self.reason = reason
        self.too_long = too_long


class ConversationLimitError(HostingError):
    """A per-conversation limit of the host was reached; ``limit`` names it (HTTP 409).

    ``limit`` is ``"pending_requests"`` (answer some first) or ``"snapshots"`` (prune the
    checkpoint first); ``maximum`` is the configured bound and ``actual`` what is there.
    """

    def __init__(self, conversation_id: str, *, limit: str, maximum: int, actual: int,
                 hint: str) -> None:
        super().__init__(
            f"conversation {conversation_id!r} has {actual} {limit.replace('_', ' ')} "
            f"(the limit is {maximum}): {hint}")
        self.conversation_id = conversation_id
        self.limit = limit
        self.maximum = maximum
        self.actual = actual


class RecordTooLargeError(HostingError):
    """An adapter's record (a thread transcript, a task, a response) would pass its bound.

    Nothing was written: ``namespace`` and ``key`` name the record, ``size`` is what it would
    be (bytes, encoded) and ``limit`` the host's ``max_record_bytes`` (HTTP 409
    ``record_too_large``; start a new thread, task or conversation).
    """

    def __init__(self, namespace: str, key: str, *, size: int, limit: int) -> None:
        super().__init__(
            f"{namespace} record {key!r} would be {size} bytes, over the limit of {limit}: "
            "start a new conversation (or raise max_record_bytes)")
        self.namespace = namespace
        self.key = key
        self.size = size
        self.limit = limit
