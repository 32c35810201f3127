"""The durable A2A task store: tasks as versioned records in the host's record store.

Every task is one record (``task/<id>``, its ProtoJSON form and the sequence numbers it is
listed at) in ``host.records("a2a")``, listed in two paged chains (``_index``): all of the
principal's tasks, and its context's. Any process sharing the host's stores sees the same
tasks after a restart. Writes are compare-and-swap on the record version (the SDK's
``VersionedTaskStore`` contract), so two writers never overwrite each other silently.

``ListTasks`` reads the chain's head, the pages one page of results needs and those tasks'
records: never the principal's whole history. Its order is **newest created first**, where
A2A 1.0 asks for the last update first: keeping that order would write the index on every
save (the SDK saves on every status and artifact event), making all of a principal's running
tasks contend for one index record. Creation order never moves an entry, so paging with the
cursor returns every task exactly once even while tasks are updated. A filtered call
(``status``, ``statusTimestampAfter``) reads at most ``SCAN_LIMIT`` task records and may
answer a short page with a cursor to go on. ``total_size`` is the listed chain's count (the
principal's or the context's tasks); with those filters it is exact only when one call
covered the whole chain, otherwise it is that count, an upper bound.

This module stores tasks only: it never runs the workflow and never decides protocol rules.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import builtins
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

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
from a2a.utils.errors import InvalidParamsError, InvalidRequestError, TaskNotFoundError
from google.protobuf import json_format

from checkflow.adapters.a2a._index import (
    ALL,
    Chain,
    Entry,
    RecordStoreLike,
    StoredRecordLike,
    TaskIndex,
)
from checkflow.errors import RecordTooLargeError, SessionConflictError

__all__ = ["PRINCIPAL_KEY", "SCAN_LIMIT", "A2ATaskStore", "RecordStoreLike", "principal_of"]

PRINCIPAL_KEY = "checkflow.principal"
"""Where the adapter's call-context builder puts the request's principal."""

TERMINAL = frozenset({a2a_pb2.TASK_STATE_COMPLETED, a2a_pb2.TASK_STATE_CANCELED,
                      a2a_pb2.TASK_STATE_FAILED, a2a_pb2.TASK_STATE_REJECTED})

SCAN_LIMIT = 200
"""Task records one ``ListTasks`` call (or one newest-task lookup) reads at most."""

_PAGE_READS = 8  # index pages one call reads at most (only deleted entries make it more than 3)
_FILTERED_BATCH = 10  # records read at once when a filter may reject most of them
_RETRIES = 50

Accept = Callable[[a2a_pb2.Task], bool]


class _RecordVersion(TaskVersion):
    """A ``TaskVersion`` that remembers the record version to pass back as expected, and the
    sequence numbers the task is listed at (every write of the record keeps them)."""

    __slots__ = ("record_version", "seqs")

    def __init__(self, record_version: str, seqs: dict[str, int] | None) -> None:
        super().__init__(record_version)
        self.record_version = record_version
        self.seqs = seqs


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


def _seqs(value: Any) -> dict[str, int] | None:
    seqs = value.get("seq")
    return {str(k): int(v) for k, v in seqs.items()} if isinstance(seqs, dict) else None


def _live(record: StoredRecordLike | None, chain: Chain, seq: int) -> a2a_pb2.Task | None:
    """The task an entry lists, or ``None`` for an entry to skip: its record is missing (a
    creation that crashed, a deleted task) or lists it elsewhere (a creator that lost)."""
    if record is None:
        return None
    seqs = _seqs(record.value)
    if seqs is not None and seqs.get(chain.slot) != seq:
        return None
    if chain.context_id is not None and record.value.get("context_id") != chain.context_id:
        return None
    return _decode(record.value)


def _query(params: a2a_pb2.ListTasksRequest) -> str:
    """What a cursor is valid for: the same chain and filters."""
    after = (params.status_timestamp_after.ToNanoseconds()
             if params.HasField("status_timestamp_after") else None)
    text = json.dumps([params.context_id, int(params.status), after])
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _cursor(position: int, query: str) -> str:
    text = json.dumps({"before": position, "query": query}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _parse_cursor(token: str, query: str) -> int:
    """The sequence number a ``nextPageToken`` goes on below, for the same ``query``."""
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        data = None
    if not isinstance(data, dict) or type(data.get("before")) is not int or data["before"] < 0:
        raise InvalidParamsError(message=f"invalid page token {token!r}: pass a "
                                         f"nextPageToken exactly as ListTasks returned it")
    if data.get("query") != query:
        raise InvalidParamsError(
            message=f"page token {token!r} was issued for another query: keep contextId, "
                    f"status and statusTimestampAfter while paging")
    return int(data["before"])


def _filter(params: a2a_pb2.ListTasksRequest) -> Accept | None:
    """The status filters as one test (``None``: no filter)."""
    status = params.status
    after = (params.status_timestamp_after.ToNanoseconds()
             if params.HasField("status_timestamp_after") else None)
    if not status and after is None:
        return None

    def accept(task: a2a_pb2.Task) -> bool:
        if status and task.status.state != status:
            return False
        return after is None or (task.status.HasField("timestamp")
                                 and task.status.timestamp.ToNanoseconds() >= after)

    return accept


class A2ATaskStore(VersionedTaskStore):
    """A versioned A2A ``TaskStore`` on a checkflow record store, scoped by principal.

    ``records`` is ``host.records("a2a")`` (or anything with its ``get``/``put``/``delete``).
    A principal only ever reads, lists or writes its own tasks: another principal's task id
    reads as unknown.
    """

    def __init__(self, records: RecordStoreLike) -> None:
        self._records = records
        self._index = TaskIndex(records)

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        """The task and the version it was read at, or ``None``."""
        record = await self._records.get(_task_key(task_id), principal=principal_of(context))
        if record is None:
            return None
        return StoredTask(_decode(record.value),
                          _RecordVersion(record.version, _seqs(record.value)))

    async def require(self, task_id: str, context: ServerCallContext) -> StoredTask:
        """The task, or ``TaskNotFoundError`` (-32001) naming it."""
        stored = await self.get(task_id, context)
        if stored is None:
            raise TaskNotFoundError(message=f"task {task_id!r} not found")
        return stored

    async def save(self, task: a2a_pb2.Task, *, event: Event | None, prev: a2a_pb2.Task | None,
                   prev_version: TaskVersion, context: ServerCallContext) -> TaskVersion:
        """Write ``task`` if the stored version is still ``prev_version``.

        A first write (``prev_version`` missing) indexes the task, then creates the record; a
        write moving the task to CANCELED overwrites any non-terminal version (a cancel wins
        over a running writer, which then sees the conflict and stops).
        """
        del event, prev
        try:
            return await self._save(task, prev_version, principal_of(context))
        except RecordTooLargeError as exc:  # A2A's own typed refusal; what was stored stays
            raise InvalidRequestError(message=str(exc), data={
                "reason": "record_too_large", "size": exc.size, "limit": exc.limit,
            }) from None

    async def _save(self, task: a2a_pb2.Task, prev_version: TaskVersion,
                    principal: str | None) -> TaskVersion:
        key = _task_key(task.id)
        value: dict[str, Any] = {"task": json_format.MessageToDict(task),
                                 "context_id": task.context_id, "updated_ns": time.time_ns()}
        if task.status.state == a2a_pb2.TASK_STATE_CANCELED:
            return await self._cancel_write(key, task.id, value, principal)
        if prev_version.is_missing:
            return await self._create(key, task, value, principal)
        if not isinstance(prev_version, _RecordVersion):
            raise ConcurrentTaskModificationError(task.id)
        if prev_version.seqs is not None:
            value["seq"] = prev_version.seqs
        try:
            version = await self._records.put(key, value, principal=principal,
                                              expected_version=prev_version.record_version)
        except SessionConflictError:
            raise ConcurrentTaskModificationError(task.id) from None
        return _RecordVersion(version, prev_version.seqs)

    async def _create(self, key: str, task: a2a_pb2.Task, value: dict[str, Any],
                      principal: str | None) -> TaskVersion:
        # index first: a crash in between leaves an entry listing skips, never an unlisted task
        seqs = await self._index.add(task.id, task.context_id, principal)
        value["seq"] = seqs
        try:
            version = await self._records.put(key, value, principal=principal, create=True)
        except SessionConflictError:
            # another creator of this id won: its record names its own entries, not ours
            await self._index.remove(task.id, task.context_id, principal, seqs)
            raise ConcurrentTaskModificationError(task.id) from None
        except RecordTooLargeError:
            await self._index.remove(task.id, task.context_id, principal, seqs)
            raise
        return _RecordVersion(version, seqs)

    async def _cancel_write(self, key: str, task_id: str, value: dict[str, Any],
                            principal: str | None) -> TaskVersion:
        for _ in range(_RETRIES):
            current = await self._records.get(key, principal=principal)
            if current is None or _decode(current.value).status.state in TERMINAL:
                raise ConcurrentTaskModificationError(task_id)
            seqs = _seqs(current.value)
            if seqs is not None:
                value["seq"] = seqs
            try:
                version = await self._records.put(key, value, principal=principal,
                                                  expected_version=current.version)
            except SessionConflictError:
                continue
            return _RecordVersion(version, seqs)
        raise ConcurrentTaskModificationError(task_id)

    async def list(self, params: a2a_pb2.ListTasksRequest,
                   context: ServerCallContext) -> a2a_pb2.ListTasksResponse:
        """One page of this principal's tasks, newest created first, filtered, by cursor."""
        principal = principal_of(context)
        chain = Chain(params.context_id) if params.context_id else ALL
        query = _query(params)
        start = _parse_cursor(params.page_token, query) if params.page_token else None
        head = await self._index.head(chain, principal)
        before = head.next if start is None else min(start, head.next)
        size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        tasks, position = await self._scan(chain, principal, before, want=size,
                                           accept=_filter(params))
        whole = start is None and position == 0
        return a2a_pb2.ListTasksResponse(
            tasks=tasks, total_size=len(tasks) if whole else head.count, page_size=size,
            next_page_token=_cursor(position, query) if position else "")

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Forget a task, then its index entries (a crash in between leaves entries that
        listing skips)."""
        principal = principal_of(context)
        record = await self._records.get(_task_key(task_id), principal=principal)
        await self._records.delete(_task_key(task_id), principal=principal)
        if record is not None:
            await self._index.remove(task_id, str(record.value["context_id"]), principal,
                                     _seqs(record.value))

    async def newest_task(self, context_id: str, context: ServerCallContext
                          ) -> a2a_pb2.Task | None:
        """The context's newest task (what the waiting-task rule asks), reading its index
        head, one page and, but for skipped entries, one task record."""
        principal = principal_of(context)
        chain = Chain(context_id)
        head = await self._index.head(chain, principal)
        tasks, _ = await self._scan(chain, principal, head.next, want=1, accept=None)
        return tasks[0] if tasks else None

    async def context_tasks(self, context_id: str, context: ServerCallContext
                            ) -> builtins.list[a2a_pb2.Task]:
        """Every task of one context, oldest first (reads that context's records only)."""
        principal = principal_of(context)
        chain = Chain(context_id)
        head = await self._index.head(chain, principal)
        tasks, _ = await self._scan(chain, principal, head.next, want=head.next, accept=None,
                                    budget=head.next, page_reads=None)
        return tasks[::-1]

    async def _scan(self, chain: Chain, principal: str | None, before: int, *, want: int,
                    accept: Accept | None, budget: int = SCAN_LIMIT,
                    page_reads: int | None = _PAGE_READS
                    ) -> tuple[builtins.list[a2a_pb2.Task], int]:
        """Up to ``want`` live tasks of ``chain`` below sequence ``before`` that ``accept``
        takes, newest first, reading at most ``budget`` task records and ``page_reads``
        pages; and the sequence number to go on below (0: the chain is done)."""
        found: builtins.list[a2a_pb2.Task] = []
        position = before
        pages = 0
        async for first, entries in self._index.pages(chain, principal, before):
            pages += 1
            done = 0
            while done < len(entries) and len(found) < want and budget > 0:
                step = want - len(found) if accept is None else max(want - len(found),
                                                                    _FILTERED_BATCH)
                batch = entries[done:done + min(step, budget)]
                budget -= len(batch)
                for (seq, _), task in zip(batch, await self._read(chain, principal, batch),
                                          strict=True):
                    done += 1
                    position = seq
                    if task is not None and (accept is None or accept(task)):
                        found.append(task)
                        if len(found) == want:
                            break
            if done == len(entries):
                position = first  # the whole page is behind us
            if (len(found) == want or budget <= 0
                    or (page_reads is not None and pages >= page_reads)):
                break
        return found, position

    async def _read(self, chain: Chain, principal: str | None, batch: builtins.list[Entry]
                    ) -> builtins.list[a2a_pb2.Task | None]:
        records = await asyncio.gather(*(
            self._records.get(_task_key(task_id), principal=principal) for _, task_id in batch))
        return [_live(record, chain, seq) for (seq, _), record in zip(batch, records,
                                                                       strict=True)]
