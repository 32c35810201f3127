"""What a host hands back: a run's outcome, a conversation's state and resume tokens.

These are plain records built after the fact; the JSON shapes clients see are rendered from
them in ``_views``. This module must never do I/O or import the web framework.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from checkflow.checkpoints import Checkpoint
    from checkflow.hosting._turns import TurnRecord
    from checkflow.workflows import PendingRequest, RunStatus, WorkflowRunResult

__all__ = ["ConversationState", "HostedRunResult", "ResumeToken"]


class ResumeToken(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The head a response was computed from; send it back to make a retry safe.

    A run given a token that no longer names the conversation's head is refused with
    ``StaleResumeTokenError`` (HTTP 409) instead of running twice.
    """

    checkpoint_id: str
    snapshot_id: str


@dataclass(frozen=True, slots=True)
class HostedRunResult:
    """One hosted run: this run's outputs, the conversation's status, pending requests and token.

    ``error`` is set (and ``status`` is ``FAILED``) when the workflow failed; ``result`` is the
    engine's own result when there is one. ``turn`` is the turn as recorded (its id, key,
    origin and snapshots), so an adapter answers from the result without reloading anything;
    ``replayed`` says the result is the recorded outcome of an earlier run of the same
    idempotency key (nothing ran).
    """

    conversation_id: str
    status: RunStatus
    outputs: list[Any] = field(default_factory=list)
    pending_requests: Mapping[str, PendingRequest] = field(default_factory=dict)
    resume_token: ResumeToken | None = None
    error: BaseException | None = None
    result: WorkflowRunResult | None = None
    turn: TurnRecord | None = None
    replayed: bool = False


@dataclass(frozen=True, slots=True)
class ConversationState:
    """A conversation as stored: status and pending requests at its head, all outputs so far.

    ``checkpoint`` is a freshly loaded copy for reading its snapshots, positioned at the
    conversation's head (``resume_token``); ``storage_head_snapshot_id`` is the storage's own
    head, which is ahead of the conversation's after a failed turn (the conversation's head
    is the truth: the next turn continues from it).
    """

    conversation_id: str
    status: RunStatus
    outputs: list[Any]
    pending_requests: Mapping[str, PendingRequest]
    resume_token: ResumeToken | None
    checkpoint: Checkpoint | None = None
    storage_head_snapshot_id: str | None = None
