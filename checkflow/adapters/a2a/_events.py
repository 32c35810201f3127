"""One hosted run as A2A task events: artifact updates for outputs, then the final status.

Used by the executor (a run it drives) and by ``SubscribeToTask`` on a run driven elsewhere
(``Host.subscribe``), so both speak the same events with the same artifact ids. The final
status of a paused run carries the pending requests (a data part; a lone tool call's text
says what answers it, ``_tools``) and the resume token (task metadata, under ``"checkflow"``;
``_metadata`` names them); a completed run's carries its last output when that is an
``A2AMessage``. This module builds events only: it never enqueues, stores or calls the host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from a2a.types import a2a_pb2

from checkflow.adapters.a2a._metadata import pending_data, task_metadata
from checkflow.adapters.a2a._parts import (
    artifact_for_output,
    message_to_proto,
    proto_value,
    takes_message,
)
from checkflow.adapters.a2a._tools import tool_text
from checkflow.adapters.a2a._types import A2AMessage, TaskRejected
from checkflow.agents import AgentResponse
from checkflow.hosting import ResumeToken, jsonable
from checkflow.workflows import PendingRequest, RunStatus

__all__ = ["RunEvents"]

_REJECTED = f"{TaskRejected.__name__}: "


def _stamp(at: str | None = None) -> Any:
    """A timestamp: ``at`` (ISO 8601, as a turn record has it) or now."""
    status = a2a_pb2.TaskStatus()
    when = datetime.now(UTC)
    if at:
        with contextlib.suppress(ValueError):
            when = datetime.fromisoformat(at)
    status.timestamp.FromDatetime(when if when.tzinfo else when.replace(tzinfo=UTC))
    return status.timestamp


def _rejection(error: BaseException | str | None) -> str | None:
    """The reason of a ``TaskRejected`` (raised, or as a turn record's error text)."""
    if isinstance(error, str):  # "...: executor 'x' failed: TaskRejected: <reason>"
        _, found, reason = error.rpartition(_REJECTED)
        return reason if found else None
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, TaskRejected):
            return error.reason
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


class RunEvents:
    """The A2A events for one run of one task (``run_index``: its position in the task)."""

    def __init__(self, task_id: str, context_id: str, run_index: int) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self._prefix = f"{task_id}-r{run_index}-"

    def status(self, state: int, *,
               message: a2a_pb2.Message | None = None,
               metadata: Mapping[str, Any] | None = None,
               at: str | None = None) -> a2a_pb2.TaskStatusUpdateEvent:
        """A status update (stamped ``at``, or now)."""
        status = a2a_pb2.TaskStatus(state=state, timestamp=_stamp(at))  # type: ignore[arg-type]
        if message is not None:
            status.message.CopyFrom(message)
        event = a2a_pb2.TaskStatusUpdateEvent(task_id=self.task_id, context_id=self.context_id,
                                              status=status)
        if metadata:
            event.metadata.update(metadata)
        return event

    def submitted(self, message: a2a_pb2.Message | None) -> a2a_pb2.Task:
        """A new task, as it is announced before its turn's first event."""
        task = a2a_pb2.Task(id=self.task_id, context_id=self.context_id,
                            status=a2a_pb2.TaskStatus(state=a2a_pb2.TASK_STATE_SUBMITTED,
                                                      timestamp=_stamp()),
                            history=[message] if message is not None else [])
        task.metadata.update(task_metadata(self.context_id, [], None))
        return task

    def working(self, at: str | None = None) -> a2a_pb2.TaskStatusUpdateEvent:
        """The task works: nothing waits for an answer (the metadata says so)."""
        return self.status(a2a_pb2.TASK_STATE_WORKING, at=at,
                           metadata=task_metadata(self.context_id, [], None))

    def agent_message(self, text: str, data: Any = None) -> a2a_pb2.Message:
        """A status message from the agent: a text part, and a data part when given. Its id
        is the run's (one status message per run), so every read names it alike."""
        parts = [a2a_pb2.Part(text=text)]
        if data is not None:
            parts.append(a2a_pb2.Part(data=proto_value(data)))
        return a2a_pb2.Message(message_id=f"{self._prefix}status", role=a2a_pb2.ROLE_AGENT,
                               context_id=self.context_id, task_id=self.task_id, parts=parts)

    def output(self, value: Any, index: int) -> a2a_pb2.TaskArtifactUpdateEvent:
        """The artifact update for the turn's ``index``-th output (its id is stable: the
        live relay, a follower and the derived task name it alike)."""
        if isinstance(value, AgentResponse):  # an agent's reply: its text
            value = value.text
        artifact, append, last = artifact_for_output(
            value, default_id=f"{self._prefix}{index}", id_prefix=self._prefix,
            to_json=jsonable)
        return a2a_pb2.TaskArtifactUpdateEvent(
            task_id=self.task_id, context_id=self.context_id, artifact=artifact,
            append=append, last_chunk=last)

    def final(self, status: RunStatus, *, pending: Mapping[str, PendingRequest],
              resume_token: ResumeToken | None, error: BaseException | str | None,
              at: str | None = None, last_output: Any = None
              ) -> a2a_pb2.TaskStatusUpdateEvent:
        """The status a run ends the task in: input-required, completed, rejected, failed or
        canceled (``error``: the exception, or a turn record's error text). A completed
        run whose last output (``last_output``) is an ``A2AMessage`` has that message as its
        status message (it stays an artifact too: a stream sends each output as it comes)."""
        if pending and status is not RunStatus.FAILED:
            ids = list(pending)
            text = (f"waiting for a message: send it with this taskId (any parts, files "
                    f"included) to answer request {ids[0]}")
            if len(ids) > 1 or not takes_message(pending[ids[0]].response_type):
                text = tool_text(pending) or (
                    f"waiting for {len(ids)} response(s): answer with a data part mapping "
                    f"request ids to values ({', '.join(ids)})")
            return self.status(a2a_pb2.TASK_STATE_INPUT_REQUIRED,
                               message=self.agent_message(text, pending_data(pending)),
                               metadata=task_metadata(self.context_id, ids, resume_token),
                               at=at)
        done_meta = task_metadata(self.context_id, [], None)
        if status is RunStatus.FAILED:
            rejected = _rejection(error)
            if rejected is not None:
                return self.status(a2a_pb2.TASK_STATE_REJECTED, metadata=done_meta,
                                   message=self.agent_message(rejected), at=at)
            return self.status(a2a_pb2.TASK_STATE_FAILED, metadata=done_meta, at=at,
                               message=self.agent_message(f"the workflow failed: {error}"))
        if status is RunStatus.CANCELLED:
            return self.status(a2a_pb2.TASK_STATE_CANCELED, metadata=done_meta, at=at,
                               message=self.agent_message(str(error or "canceled")))
        if status is RunStatus.RUNNING:
            return self.working(at)
        reply = self.reply(last_output) if isinstance(last_output, A2AMessage) else None
        return self.status(a2a_pb2.TASK_STATE_COMPLETED, metadata=done_meta, at=at,
                           message=reply)

    def reply(self, message: A2AMessage) -> a2a_pb2.Message:
        """A message the workflow yielded, as the task's status message: its parts and
        metadata; its id its own, else the run's status message id (stable, as above)."""
        return message_to_proto(message, message_id=f"{self._prefix}status",
                                context_id=self.context_id, task_id=self.task_id)
