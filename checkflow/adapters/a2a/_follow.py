"""Following a task from any process: ``SubscribeToTask`` and a retry that attaches.

The follower sends the task as it is, then follows its turns through ``Host.follow``: the
running turn's live events in the process that runs it, its committed snapshots elsewhere
(superstep granularity: a non-owner never sees token deltas or per-executor events, only
each snapshot's outputs). Between turns (an ``INPUT_REQUIRED`` task waiting for its answer)
it polls the lease (is a turn running?) and, every few polls, the task's turns, and picks up
the continuation when it starts. It ends at the
task's next interrupted or terminal state, with that status update; a turn whose owner died
is settled by ``find_turn`` (``FAILED``, or ``INPUT_REQUIRED`` when the head is the pause),
so a follower never waits on a dead process. This module never writes anything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from a2a.server.events import Event
from a2a.types import a2a_pb2

from checkflow.adapters.a2a._events import RunEvents
from checkflow.adapters.a2a._ids import TERMINAL
from checkflow.adapters.a2a._store import A2ATaskStore
from checkflow.adapters.a2a._view import TaskView
from checkflow.hosting import Host
from checkflow.workflows import OutputEvent

__all__ = ["follow_task"]

_RELOAD_EVERY = 4
"""Idle polls (asking only whether a turn runs) per read of the task's turns: a turn that
started and ended between two polls is still seen, within this many polls."""


def _status_of(view: TaskView) -> a2a_pb2.TaskStatusUpdateEvent:
    task = view.task
    event = a2a_pb2.TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id,
                                          status=task.status)
    if task.HasField("metadata"):
        event.metadata.CopyFrom(task.metadata)
    return event


async def follow_task(host: Host, store: A2ATaskStore, view: TaskView, first: a2a_pb2.Task,
                      principal: str | None, *, poll_seconds: float, max_seconds: float
                      ) -> AsyncIterator[Event]:
    """``first`` (the task as served now), then its events until it stops again."""
    task_id, context_id = view.task.id, view.task.context_id
    yield first
    sent = set(view.outputs)
    shown = (view.last.turn_id, view.state)
    waiting = view.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED
    end = time.monotonic() + max_seconds
    idle = 0
    while time.monotonic() < end:
        if view.state in TERMINAL:
            return  # it changes no more (it may have ended before it was followed)
        running = view.last.state == "running"
        index = len(view.turns) - 1 if running else len(view.turns)
        events = RunEvents(task_id, context_id, index)
        saw, outputs = False, 0
        async for event in host.follow(context_id, principal=principal,
                                       turn_id=view.last.turn_id if running else None):
            if not saw and waiting:  # the continuation started
                waiting = False
                yield events.working()
            saw = True
            if isinstance(event, OutputEvent):
                if (index, outputs) not in sent:
                    sent.add((index, outputs))
                    yield events.output(event.data, outputs)
                outputs += 1
        idle = 0 if saw else idle + 1
        if idle % _RELOAD_EVERY:  # nothing ran: the lease says so; read the turns now and then
            await asyncio.sleep(poll_seconds)
            continue
        fresh = await store.load(task_id, principal)
        if fresh is None:
            return
        for place in fresh.outputs:
            if place not in sent:
                sent.add(place)
                turn_index, number = place
                value = fresh.turns[turn_index].outputs[number]
                yield RunEvents(task_id, context_id, turn_index).output(value, number)
        now = (fresh.last.turn_id, fresh.state)
        if now != shown:
            yield _status_of(fresh)
            shown = now
            if fresh.state in TERMINAL or fresh.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED:
                return
        view, waiting = fresh, fresh.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED
        if not saw:
            await asyncio.sleep(poll_seconds)

