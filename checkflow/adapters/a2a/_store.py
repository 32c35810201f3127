"""The SDK's ``TaskStore``, derived: every task is read from the host's turn records.

The SDK saves a task on every event it relays and reads it back for ``GetTask``,
``ListTasks``, cancels and follow-ups. None of that becomes a record beside the checkpoint:
``get`` and ``list`` render tasks from ``Host.find_turn`` and ``Host.turns`` (``_view``), and
``save`` only keeps the SDK's copy of a task *this process is relaying right now* (with the
artifacts streamed so far, ahead of the turn's next commit) in memory. That copy is a cache
the checkpoint overrules: it is served only while the relay runs, and dropped when it ends,
so after the turn (or a restart, or on another process) the task is what the turns say.
Between the gate starting a turn and its relay's first event, the task is *announced*: the
SDK is served the task as it was when the request came (none for a new one), not the turn
the gate just started, so it builds on the same task the client named.

``ListTasks`` is newest created first (a task's first turn's start), filtered by context,
status and ``statusTimestampAfter``, paged by an opaque cursor valid for the query that
issued it. It renders the caller's contexts (one with ``contextId``) from their lineages:
its cost is the caller's turns, not a page (docs/adapters/a2a.md says so).
This module never runs the workflow and never decides protocol rules.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import builtins
import contextvars
import hashlib
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from a2a.server.cluster import StoredTask, TaskVersion, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.types import a2a_pb2
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError

from checkflow.adapters.a2a._ids import principal_of
from checkflow.adapters.a2a._view import TaskView, context_tasks, load_task
from checkflow.errors import ConversationNotFoundError
from checkflow.hosting import Host

__all__ = ["REQUEST_VIEWS", "A2ATaskStore", "RequestViews"]

Accept = Callable[[a2a_pb2.Task], bool]



@dataclass(eq=False, slots=True)
class RequestViews:
    """The tasks one ``SendMessage`` read, as they were when it came (a running turn there
    would refuse the message as busy, so no lease is asked about it). Only the request's own
    asyncio task reads them: the SDK's background tasks for a task, started while a request
    is served, inherit its context but outlive it."""

    owner: asyncio.Task[Any] | None = field(default_factory=asyncio.current_task)
    views: dict[str, TaskView | None] = field(default_factory=dict)


REQUEST_VIEWS: contextvars.ContextVar[RequestViews | None] = contextvars.ContextVar(
    "checkflow_a2a_request_views", default=None)
"""Set by the handler for one ``SendMessage``."""
_versions = itertools.count(1)


def _version() -> TaskVersion:
    return TaskVersion(next(_versions))


def _query(params: a2a_pb2.ListTasksRequest) -> str:
    """What a cursor is valid for: the same context and filters."""
    after = (params.status_timestamp_after.ToNanoseconds()
             if params.HasField("status_timestamp_after") else None)
    text = json.dumps([params.context_id, int(params.status), after])
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _cursor(position: list[str], query: str) -> str:
    text = json.dumps({"after": position, "query": query}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _parse_cursor(token: str, query: str) -> list[str]:
    """The sort position a ``nextPageToken`` goes on after, for the same ``query``."""
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        data = None
    after = data.get("after") if isinstance(data, dict) else None
    if not (isinstance(after, list) and len(after) == 2
            and all(isinstance(a, str) for a in after)):
        raise InvalidParamsError(message=f"invalid page token {token!r}: pass a "
                                         f"nextPageToken exactly as ListTasks returned it")
    assert isinstance(data, dict)
    if data.get("query") != query:
        raise InvalidParamsError(
            message=f"page token {token!r} was issued for another query: keep contextId, "
                    f"status and statusTimestampAfter while paging")
    return [str(a) for a in after]


def _filter(params: a2a_pb2.ListTasksRequest) -> Accept:
    status = params.status
    after = (params.status_timestamp_after.ToNanoseconds()
             if params.HasField("status_timestamp_after") else None)

    def accept(task: a2a_pb2.Task) -> bool:
        if status and task.status.state != status:
            return False
        return after is None or (task.status.HasField("timestamp")
                                 and task.status.timestamp.ToNanoseconds() >= after)

    return accept


def _position(view: TaskView) -> list[str]:
    """A task's place in the listing: its first turn's start, then its id."""
    return [view.turns[0].started_at or "", view.task.id]


class A2ATaskStore(VersionedTaskStore):
    """A versioned A2A ``TaskStore`` whose tasks are the host's turns, scoped by principal.

    ``relaying(task_id)`` says whether this process relays that task's turn now; only then
    is the SDK's own saved copy served (``save`` keeps nothing else, and nothing durable).
    """

    def __init__(self, host: Host, relaying: Callable[[str], bool]) -> None:
        self._host = host
        self._relaying = relaying
        self._live: dict[str, a2a_pb2.Task] = {}
        self._announced: dict[str, TaskView | None] = {}
        self._since: dict[str, str] = {}  # when a live copy was first saved (list order)

    def forget(self, task_id: str) -> None:
        """The relay of ``task_id`` ended: from now on the turns say what it is."""
        self._live.pop(task_id, None)
        self._since.pop(task_id, None)
        self._announced.pop(task_id, None)

    def announce(self, task_id: str, view: TaskView | None) -> None:
        """Serve ``view`` (``None``: a new task, which the relay announces itself) for
        ``task_id`` until its relay's first event is saved: the SDK sets up the request's
        task from it, not from the turn the gate just started."""
        self._announced[task_id] = view

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        """The task as the turns record it (or as this process is relaying it now)."""
        live = self._live.get(task_id)
        if live is not None and self._relaying(task_id):
            copy = a2a_pb2.Task()
            copy.CopyFrom(live)
            return StoredTask(copy, _version())
        view = await self.view(task_id, context)
        if view is None:
            return None
        copy = a2a_pb2.Task()
        copy.CopyFrom(view.task)  # the SDK edits what it reads (history length, ...)
        return StoredTask(copy, _version())

    async def view(self, task_id: str, context: ServerCallContext) -> TaskView | None:
        """The task rendered from the turns, with its turns (never the live copy); read
        once per ``SendMessage`` (``REQUEST_VIEWS``): the SDK's setup, the gate and the
        relay's start all ask for the task as it was when the request came."""
        if task_id in self._announced:
            return self._announced[task_id]
        cache = REQUEST_VIEWS.get()
        views = (cache.views if cache is not None and cache.owner is asyncio.current_task()
                 else None)
        if views is not None and task_id in views:
            return views[task_id]
        view = await load_task(self._host, task_id, principal_of(context),
                               check_running=views is None)
        if views is not None:
            views[task_id] = view
        return view

    async def load(self, task_id: str, principal: str | None) -> TaskView | None:
        """The task rendered from the turns now, for a principal (never cached)."""
        return await load_task(self._host, task_id, principal)

    async def require(self, task_id: str, context: ServerCallContext) -> TaskView:
        """The task's view, or ``TaskNotFoundError`` (-32001) naming it."""
        view = await self.view(task_id, context)
        if view is None:
            raise TaskNotFoundError(message=f"task {task_id!r} not found")
        return view

    async def save(self, task: a2a_pb2.Task, *, event: Event | None, prev: a2a_pb2.Task | None,
                   prev_version: TaskVersion, context: ServerCallContext) -> TaskVersion:
        """Keep the SDK's copy of a task relayed here, in memory only (see the module)."""
        del event, prev, prev_version, context
        self._announced.pop(task.id, None)  # the relay's first event: its copy is the task
        if self._relaying(task.id):
            copy = a2a_pb2.Task()
            copy.CopyFrom(task)
            self._live[task.id] = copy
            self._since.setdefault(task.id, datetime.now(UTC).isoformat())
        return _version()

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Nothing to delete: a task is its turns (``DELETE`` the conversation natively)."""
        del context
        self.forget(task_id)

    async def context_views(self, context_id: str, principal: str | None
                            ) -> builtins.list[TaskView]:
        """The context's tasks on its lineage, oldest first (none for no conversation)."""
        try:
            lineage = await self._host.turns(context_id, principal=principal)
        except ConversationNotFoundError:
            return []
        return context_tasks(context_id, lineage)

    async def list(self, params: a2a_pb2.ListTasksRequest,
                   context: ServerCallContext) -> a2a_pb2.ListTasksResponse:
        """One page of this principal's tasks, newest created first, filtered, by cursor."""
        principal = principal_of(context)
        query = _query(params)
        after = _parse_cursor(params.page_token, query) if params.page_token else None
        contexts = ([params.context_id] if params.context_id
                    else await self._host.list_conversations(principal=principal))
        positions: dict[str, list[str]] = {}
        tasks: dict[str, a2a_pb2.Task] = {}
        for context_id in contexts:
            for view in await self.context_views(context_id, principal):
                positions[view.task.id], tasks[view.task.id] = _position(view), view.task
        for task_id, live in self._live.items():  # a first turn relayed here, still running
            if (task_id not in tasks and self._relaying(task_id)
                    and live.context_id in contexts):
                positions[task_id], tasks[task_id] = [self._since[task_id], task_id], live
        order = sorted(tasks, key=positions.__getitem__, reverse=True)
        accept = _filter(params)
        matching = [t for t in order if accept(tasks[t])]
        total = len(matching)
        if after is not None:
            matching = [t for t in matching if positions[t] < after]
        size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        page, more = matching[:size], len(matching) > size
        return a2a_pb2.ListTasksResponse(
            tasks=[tasks[t] for t in page], total_size=total, page_size=size,
            next_page_token=_cursor(positions[page[-1]], query) if more else "")
