"""An A2A task as the checkpoint says it is: rendered from the host's turn records.

A task is the turns that carry its id in their ``TurnOrigin.data`` (``task_id``, and the
``message`` as the client sent it): the turn its first message started, then each
continuation (a native answer to its pause too), in lineage order. Its history is those
messages, its artifacts their turns' outputs (ids by turn and output index, as the live
relay names them), its status the last turn's outcome: ``INPUT_REQUIRED`` with the pending
requests and the resume token of that turn's last snapshot, ``COMPLETED`` (with the turn's
last output as status message when that is an ``A2AMessage``),
``FAILED``/``REJECTED`` (with the error), ``CANCELED``, or ``WORKING`` while it runs. A
context's tasks (its task index) are the lineage's turns grouped by task. Nothing here is
stored: a branch, a native answer, a cancel or a crash is seen exactly as the checkpoint and
the session record it. This module never does I/O but through the ``Host`` reads it is given
(``load_task``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from a2a.types import a2a_pb2
from google.protobuf import json_format

from checkflow.adapters.a2a._events import RunEvents
from checkflow.adapters.a2a._ids import parse_task_id
from checkflow.errors import ConversationNotFoundError
from checkflow.hosting import Host, ResumeToken, TurnRecord
from checkflow.workflows import RunStatus

__all__ = ["TaskView", "add_artifact", "context_tasks", "load_task", "origin_data",
           "render", "task_turns"]

TASK_KEY = "task_id"
MESSAGE_KEY = "message"


def origin_data(task_id: str, message: a2a_pb2.Message) -> dict[str, Any]:
    """What a turn records of its A2A origin (committed with its first snapshot)."""
    return {TASK_KEY: task_id, MESSAGE_KEY: json_format.MessageToDict(message)}


@dataclass(slots=True)
class TaskView:
    """A rendered task with what followers need: its turns and each output's place."""

    task: a2a_pb2.Task
    turns: list[TurnRecord]
    outputs: list[tuple[int, int]] = field(default_factory=list)
    """``(turn index, output index)`` of every output shown, in order."""

    @property
    def state(self) -> int:
        return int(self.task.status.state)

    @property
    def last(self) -> TurnRecord:
        return self.turns[-1]


def add_artifact(artifacts: Any, update: a2a_pb2.TaskArtifactUpdateEvent) -> None:
    """Apply one artifact update to a task's artifacts (a chunk appends to its artifact)."""
    for artifact in artifacts:
        if artifact.artifact_id == update.artifact.artifact_id:
            if update.append:
                artifact.parts.extend(update.artifact.parts)
            else:
                artifact.CopyFrom(update.artifact)
            return
    artifacts.append(update.artifact)


def _message(turn: TurnRecord) -> a2a_pb2.Message | None:
    value = turn.data.get(MESSAGE_KEY)
    if not isinstance(value, dict):
        return None
    message = a2a_pb2.Message()
    json_format.ParseDict(value, message, ignore_unknown_fields=True)
    return message


def _status(events: RunEvents, turn: TurnRecord) -> a2a_pb2.TaskStatusUpdateEvent:
    if turn.state == "running":
        return events.working(turn.started_at)
    if turn.state in ("failed", "cancelled"):
        status = RunStatus.CANCELLED if turn.state == "cancelled" else RunStatus.FAILED
        return events.final(status, pending={}, resume_token=None, error=turn.error,
                            at=turn.ended_at)
    token = (ResumeToken(turn.checkpoint_id, turn.last_snapshot_id)
             if turn.checkpoint_id and turn.last_snapshot_id else None)
    return events.final(turn.status, pending=turn.pending_requests, resume_token=token,
                        error=turn.error, at=turn.ended_at or turn.started_at,
                        last_output=turn.outputs[-1] if turn.outputs else None)


def render(task_id: str, context_id: str, turns: Sequence[TurnRecord]) -> TaskView:
    """The task whose turns (first first) are ``turns``."""
    task = a2a_pb2.Task(id=task_id, context_id=context_id)
    view = TaskView(task, list(turns))
    for index, turn in enumerate(turns):
        message = _message(turn)
        if message is not None:
            task.history.append(message)
        events = RunEvents(task_id, context_id, index)
        for number, value in enumerate(turn.outputs):
            add_artifact(task.artifacts, events.output(value, number))
            view.outputs.append((index, number))
        if index < len(turns) - 1 and turn.pending_requests:
            paused = _status(events, turn).status  # the question the next turn answered
            if paused.HasField("message"):
                task.history.append(paused.message)
    final = _status(RunEvents(task_id, context_id, len(turns) - 1), turns[-1])
    task.status.CopyFrom(final.status)
    if final.HasField("metadata"):
        task.metadata.CopyFrom(final.metadata)
    return view


def task_turns(lineage: Sequence[TurnRecord]) -> dict[str, list[TurnRecord]]:
    """The lineage's turns by task, in order. A turn of another protocol (the native API)
    that answered a paused task's requests continues that task; any other belongs to none."""
    grouped: dict[str, list[TurnRecord]] = {}
    previous: tuple[str, TurnRecord] | None = None
    for turn in lineage:
        task_id = turn.data.get(TASK_KEY)
        if not isinstance(task_id, str) and previous is not None:
            owner, before = previous
            if set(before.pending_requests) - set(turn.pending_requests):
                task_id = owner  # it answered the task's request: a native answer
        if isinstance(task_id, str):
            grouped.setdefault(task_id, []).append(turn)
            previous = (task_id, turn)
        else:
            previous = None
    return grouped


def context_tasks(context_id: str, lineage: Sequence[TurnRecord]) -> list[TaskView]:
    """The context's tasks on its lineage, oldest first."""
    return [render(task_id, context_id, turns)
            for task_id, turns in task_turns(lineage).items()]


async def load_task(host: Host, task_id: str, principal: str | None, *,
                    check_running: bool = True) -> TaskView | None:
    """The task of that id, from the host's records; ``None`` if there is none.

    The id names the context and the first message's id, the first turn's idempotency
    key. Most tasks are on the context's lineage, so that is read first (one session read,
    one checkpoint load, which a ``Host.run`` right after reuses); a task found there
    paused at the head may have its continuation running, which ``check_running`` asks the
    lease about (and, when none runs, reads the lineage again: one that ended between the
    two reads is on it by then). Otherwise ``find_turn`` answers its first turn wherever it
    is recorded: running, failed, cancelled (its owner dead too), or on a line a branch left.
    """
    parsed = parse_task_id(task_id)
    if parsed is None:
        return None
    context_id, key = parsed
    try:
        lineage = await host.turns(context_id, principal=principal)
    except ConversationNotFoundError:
        lineage = []
    turns = task_turns(lineage).get(task_id)
    if not turns or turns[0].idempotency_key != key:
        try:
            first = await host.find_turn(context_id, idempotency_key=key,
                                         principal=principal)
        except ConversationNotFoundError:
            return None
        if first is None or first.data.get(TASK_KEY) != task_id:
            return None
        turns = [first]
    elif check_running and turns[-1].pending_requests and lineage[-1] is turns[-1]:
        # paused at the head: its continuation may be running (here or elsewhere)
        running = await host.find_turn(context_id, principal=principal)
        if running is not None and running.data.get(TASK_KEY) == task_id:
            turns.append(running)
        elif running is None:
            # The lineage was read before the lease: a continuation that ended in between is
            # on the lineage now. Read it again rather than show the pause it answered.
            return await load_task(host, task_id, principal, check_running=False)
    return render(task_id, context_id, turns)
