"""The durable A2A task store: tasks as versioned records in the host's record store.

Every task is one record (``task/<id>``, its ProtoJSON form) plus one index record per
principal listing ``(task id, context id)`` in creation order, all kept by
``host.records("a2a")``, so any process sharing the host's stores sees the same tasks after a
restart. Writes are compare-and-swap on the record version (the SDK's ``VersionedTaskStore``
contract), so two writers never overwrite each other silently. This module stores tasks only:
it never runs the workflow and never decides protocol rules.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import time
from typing import Any, Protocol

from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    StoredTask,
    TaskVersion,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.types import a2a_pb2
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from google.protobuf import json_format

from checkflow.errors import SessionConflictError

__all__ = ["PRINCIPAL_KEY", "A2ATaskStore", "RecordStoreLike", "principal_of"]

PRINCIPAL_KEY = "checkflow.principal"
"""Where the adapter's call-context builder puts the request's principal."""

TERMINAL = frozenset({a2a_pb2.TASK_STATE_COMPLETED, a2a_pb2.TASK_STATE_CANCELED,
                      a2a_pb2.TASK_STATE_FAILED, a2a_pb2.TASK_STATE_REJECTED})
_INDEX = "index"
_RETRIES = 50


class _StoredRecord(Protocol):
    @property
    def value(self) -> Any: ...
    @property
    def version(self) -> str: ...


class RecordStoreLike(Protocol):
    """What this store needs of ``host.records(namespace)``."""

    async def get(self, key: str, *, principal: str | None = None) -> _StoredRecord | None: ...

    async def put(self, key: str, value: Any, *, principal: str | None = None,
                  expected_version: str | None = None, create: bool = False) -> str: ...

    async def delete(self, key: str, *, principal: str | None = None) -> None: ...


class _RecordVersion(TaskVersion):
    """A ``TaskVersion`` that remembers the record version to pass back as expected."""

    __slots__ = ("record_version",)

    def __init__(self, record_version: str) -> None:
        super().__init__(record_version)
        self.record_version = record_version


def principal_of(context: ServerCallContext) -> str | None:
    """The checkflow principal the call context carries (``None``: anonymous)."""
    principal = context.state.get(PRINCIPAL_KEY)
    return principal if isinstance(principal, str) else None


def _task_key(task_id: str) -> str:
    return f"task/{task_id}"


def _decode(value: Any) -> a2a_pb2.Task:
    task = a2a_pb2.Task()
    json_format.ParseDict(value["task"], task)
    return task


def _sort_key(value: Any, task_id: str) -> tuple[int, str]:
    return (int(value.get("updated_ns", 0)), task_id)


def _cursor(key: tuple[int, str]) -> str:
    return base64.urlsafe_b64encode(f"{key[0]}:{key[1]}".encode()).decode()


def _parse_cursor(token: str) -> tuple[int, str]:
    try:
        ns, _, task_id = base64.urlsafe_b64decode(token.encode()).decode().partition(":")
        return int(ns), task_id
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidParamsError(message=f"invalid page token {token!r}") from None


class A2ATaskStore(VersionedTaskStore):
    """A versioned A2A ``TaskStore`` on a checkflow record store, scoped by principal.

    ``records`` is ``host.records("a2a")`` (or anything with its ``get``/``put``/``delete``).
    A principal only ever reads, lists or writes its own tasks: another principal's task id
    reads as unknown.
    """

    def __init__(self, records: RecordStoreLike) -> None:
        self._records = records

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        """The task and the version it was read at, or ``None``."""
        record = await self._records.get(_task_key(task_id), principal=principal_of(context))
        if record is None:
            return None
        return StoredTask(_decode(record.value), _RecordVersion(record.version))

    async def require(self, task_id: str, context: ServerCallContext) -> StoredTask:
        """The task, or ``TaskNotFoundError`` (-32001) naming it."""
        stored = await self.get(task_id, context)
        if stored is None:
            raise TaskNotFoundError(message=f"task {task_id!r} not found")
        return stored

    async def save(self, task: a2a_pb2.Task, *, event: Event | None, prev: a2a_pb2.Task | None,
                   prev_version: TaskVersion, context: ServerCallContext) -> TaskVersion:
        """Write ``task`` if the stored version is still ``prev_version``.

        A first write (``prev_version`` missing) creates the record and indexes it; a write
        moving the task to CANCELED overwrites any non-terminal version (a cancel wins over
        a running writer, which then sees the conflict and stops).
        """
        del event, prev
        principal = principal_of(context)
        key = _task_key(task.id)
        value = {"task": json_format.MessageToDict(task), "context_id": task.context_id,
                 "updated_ns": time.time_ns()}
        if task.status.state == a2a_pb2.TASK_STATE_CANCELED:
            return await self._cancel_write(key, task.id, value, principal)
        try:
            if prev_version.is_missing:
                # index first: a crash in between leaves an entry listing skips, never an
                # unlisted task
                await self._index_add(task.id, task.context_id, principal)
                version = await self._records.put(key, value, principal=principal, create=True)
            else:
                expected = prev_version.record_version if isinstance(
                    prev_version, _RecordVersion) else None
                if expected is None:
                    raise ConcurrentTaskModificationError(task.id)
                version = await self._records.put(key, value, principal=principal,
                                                  expected_version=expected)
        except SessionConflictError:
            raise ConcurrentTaskModificationError(task.id) from None
        return _RecordVersion(version)

    async def _cancel_write(self, key: str, task_id: str, value: dict[str, Any],
                            principal: str | None) -> TaskVersion:
        for _ in range(_RETRIES):
            current = await self._records.get(key, principal=principal)
            if current is None or _decode(current.value).status.state in TERMINAL:
                raise ConcurrentTaskModificationError(task_id)
            try:
                version = await self._records.put(key, value, principal=principal,
                                                  expected_version=current.version)
            except SessionConflictError:
                continue
            return _RecordVersion(version)
        raise ConcurrentTaskModificationError(task_id)

    async def list(self, params: a2a_pb2.ListTasksRequest,
                   context: ServerCallContext) -> a2a_pb2.ListTasksResponse:
        """This principal's tasks, newest update first, filtered and paged by a cursor."""
        principal = principal_of(context)
        entries = await self._index(principal)
        if params.context_id:
            entries = [e for e in entries if e[1] == params.context_id]
        found: builtins.list[tuple[tuple[int, str], a2a_pb2.Task]] = []
        for task_id, _ in entries:
            record = await self._records.get(_task_key(task_id), principal=principal)
            if record is None:
                continue
            task = _decode(record.value)
            if params.status and task.status.state != params.status:
                continue
            if params.HasField("status_timestamp_after") and (
                    not task.status.HasField("timestamp")
                    or task.status.timestamp.ToNanoseconds()
                    < params.status_timestamp_after.ToNanoseconds()):
                continue
            found.append((_sort_key(record.value, task_id), task))
        found.sort(key=lambda item: item[0], reverse=True)
        start = 0
        if params.page_token:
            after = _parse_cursor(params.page_token)
            start = next((i for i, (k, _) in enumerate(found) if k < after), len(found))
        size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        page = found[start:start + size]
        more = start + size < len(found)
        return a2a_pb2.ListTasksResponse(
            tasks=[task for _, task in page], total_size=len(found), page_size=size,
            next_page_token=_cursor(page[-1][0]) if more and page else "")

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Forget a task (and its index entry)."""
        principal = principal_of(context)
        await self._records.delete(_task_key(task_id), principal=principal)
        await self._update_index(principal, lambda tasks: [t for t in tasks if t[0] != task_id])

    async def context_tasks(self, context_id: str, context: ServerCallContext
                            ) -> builtins.list[a2a_pb2.Task]:
        """Every task of one context, oldest first (for the waiting-task rule)."""
        principal = principal_of(context)
        tasks = []
        for task_id, owner in await self._index(principal):
            if owner != context_id:
                continue
            record = await self._records.get(_task_key(task_id), principal=principal)
            if record is not None:
                tasks.append(_decode(record.value))
        return tasks

    async def _index(self, principal: str | None) -> builtins.list[tuple[str, str]]:
        record = await self._records.get(_INDEX, principal=principal)
        if record is None:
            return []
        return [(str(t), str(c)) for t, c in record.value["tasks"]]

    async def _index_add(self, task_id: str, context_id: str, principal: str | None) -> None:
        await self._update_index(principal, lambda tasks: tasks if [task_id, context_id] in tasks
                                 else [*tasks, [task_id, context_id]])

    async def _update_index(self, principal: str | None, change: Any) -> None:
        for _ in range(_RETRIES):
            record = await self._records.get(_INDEX, principal=principal)
            tasks = [list(t) for t in record.value["tasks"]] if record else []
            try:
                if record is None:
                    await self._records.put(_INDEX, {"tasks": change(tasks)},
                                            principal=principal, create=True)
                else:
                    await self._records.put(_INDEX, {"tasks": change(tasks)},
                                            principal=principal,
                                            expected_version=record.version)
            except SessionConflictError:
                continue
            return
        raise ConcurrentTaskModificationError(_INDEX)
