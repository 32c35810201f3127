"""The A2A task index: chains of fixed-size pages, one per principal and one per context.

``ListTasks`` and the gate's waiting-task rule must cost what one page costs, never what a
principal's history costs. So every task is listed in two *chains* of ``host.records("a2a")``
records: one of all the principal's tasks and one of its context's. A chain is a small head
record (``next``: sequence numbers handed out so far; ``count``: entries listed now) and page
records of at most ``PAGE_SIZE`` entries ``[seq, task_id]``. Entry ``seq`` lives in page
``seq // PAGE_SIZE``, so a reader walks back from any sequence number (a cursor) without
reading the pages above it. Sequence numbers follow creation, and an entry never moves:
updating a task never writes the index (the order is creation, not last update).

Writes are compare-and-swap with retries: a creator reserves a sequence number on the head,
then adds its entry to that number's page. A crash in between leaves a reserved number without
an entry (``count`` one too high), never a broken chain. An entry says only where a task was
listed; whether it is live is the task record's to say (it names its own sequence numbers),
and this module never reads or writes task records.

The first format kept one record ``index`` per principal (``{"tasks": [[task_id,
context_id], ...]}``, in creation order); ``migrate`` turns it into chains once, lazily.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from a2a.server.cluster import ConcurrentTaskModificationError

from checkflow.errors import SessionConflictError

__all__ = ["ALL", "LEGACY_KEY", "PAGE_SIZE", "Chain", "Entry", "Head", "RecordStoreLike",
           "TaskIndex"]

PAGE_SIZE = 100
"""Entries per page record."""

LEGACY_KEY = "index"
"""The first format's single index record of a principal."""

_RETRIES = 50
_MIGRATION_WRITES = 32  # records written at once while migrating

Entry = tuple[int, str]
"""``(seq, task_id)``: one listed task."""


class StoredRecordLike(Protocol):
    """A record as ``RecordStore.get`` answers it."""

    @property
    def value(self) -> Any: ...
    @property
    def version(self) -> str: ...


class RecordStoreLike(Protocol):
    """What the task store and its index need of ``host.records(namespace)``."""

    async def get(self, key: str, *, principal: str | None = None
                  ) -> StoredRecordLike | None: ...

    async def put(self, key: str, value: Any, *, principal: str | None = None,
                  expected_version: str | None = None, create: bool = False) -> str: ...

    async def delete(self, key: str, *, principal: str | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class Chain:
    """One listing: all of a principal's tasks (no ``context_id``), or one context's."""

    context_id: str | None = None

    @property
    def slot(self) -> str:
        """The name a task record keeps its sequence number in this chain under."""
        return "all" if self.context_id is None else "context"

    def key(self, part: str | int) -> str:
        """The record key of the head (``"head"``) or of page ``part``."""
        # JSON keeps every context id apart from the part, whatever characters it has
        return "tasks:" + json.dumps([self.slot, self.context_id or "", part])


ALL = Chain()
"""The chain of all of a principal's tasks."""


@dataclass(frozen=True, slots=True)
class Head:
    """A chain's head: sequence numbers handed out, and entries listed now."""

    next: int = 0
    count: int = 0

    @classmethod
    def of(cls, record: StoredRecordLike | None) -> Head:
        if record is None:
            return cls()
        return cls(int(record.value["next"]), int(record.value["count"]))

    def value(self) -> dict[str, int]:
        return {"next": self.next, "count": self.count}


def _entries(record: StoredRecordLike | None) -> list[Entry]:
    if record is None:
        return []
    return [(int(seq), str(task_id)) for seq, task_id in record.value["entries"]]


def _page_value(entries: Iterable[Entry]) -> dict[str, Any]:
    return {"entries": [[seq, task_id] for seq, task_id in entries]}


def _legacy_tasks(value: Any) -> list[tuple[str, str]]:
    """The first format's ``(task_id, context_id)`` pairs, oldest first, each once."""
    seen: set[str] = set()
    tasks = []
    for task_id, context_id in value.get("tasks", []):
        if str(task_id) not in seen:
            seen.add(str(task_id))
            tasks.append((str(task_id), str(context_id)))
    return tasks


class TaskIndex:
    """The chains of ``records`` (``host.records("a2a")``), per principal."""

    def __init__(self, records: RecordStoreLike) -> None:
        self._records = records

    async def head(self, chain: Chain, principal: str | None) -> Head:
        """The chain's head (migrating the first format's index if it is still there)."""
        record = await self._records.get(chain.key("head"), principal=principal)
        if record is None and await self.migrate(principal):
            record = await self._records.get(chain.key("head"), principal=principal)
        return Head.of(record)

    async def pages(self, chain: Chain, principal: str | None, before: int
                    ) -> AsyncIterator[tuple[int, list[Entry]]]:
        """The pages below sequence number ``before``, newest first, each read when asked for:
        ``(the page's first seq, its entries below before, newest first)``."""
        page = (before - 1) // PAGE_SIZE
        while page >= 0:
            record = await self._records.get(chain.key(page), principal=principal)
            entries = sorted((e for e in _entries(record) if e[0] < before), reverse=True)
            yield page * PAGE_SIZE, entries
            page -= 1

    async def add(self, task_id: str, context_id: str, principal: str | None
                  ) -> dict[str, int]:
        """List a new task in both its chains; its sequence number in each, by slot."""
        async def add_to(chain: Chain) -> int:
            seq = await self._reserve(chain, principal, task_id)
            await self._insert(chain, principal, (seq, task_id))
            return seq

        every, own = await asyncio.gather(add_to(ALL), add_to(Chain(context_id)))
        return {ALL.slot: every, Chain(context_id).slot: own}

    async def remove(self, task_id: str, context_id: str, principal: str | None,
                     seqs: dict[str, int] | None) -> None:
        """Unlist a task from both its chains (at ``seqs``; unknown ones are searched for)."""
        for chain in (ALL, Chain(context_id)):
            seq = (seqs or {}).get(chain.slot)
            if seq is None:
                seq = await self._find(chain, principal, task_id)
            if seq is not None and await self._drop(chain, principal, (seq, task_id)):
                await self._update_head(chain, principal, task_id, lambda h: Head(
                    h.next, max(h.count - 1, 0)))

    async def migrate(self, principal: str | None) -> bool:
        """Turn the first format's index into chains, once; whether there was one.

        Context chains are written first and the principal's head last: once that head
        exists every chain does. Every write only creates, so two processes migrating at
        once (or a creator that finished migrating and has listed a task since) never
        overwrite each other.
        """
        legacy = await self._records.get(LEGACY_KEY, principal=principal)
        if legacy is None:
            return False
        if await self._records.get(ALL.key("head"), principal=principal) is None:
            tasks = _legacy_tasks(legacy.value)
            contexts: dict[str, list[str]] = {}
            for task_id, context_id in tasks:
                contexts.setdefault(context_id, []).append(task_id)
            await self._create_all(
                write for context_id, ids in contexts.items()
                for write in self._chain_writes(Chain(context_id), ids, principal))
            *pages, head = self._chain_writes(ALL, [t for t, _ in tasks], principal)
            await self._create_all(pages)
            await self._create_all([head])
        await self._records.delete(LEGACY_KEY, principal=principal)
        return True

    def _chain_writes(self, chain: Chain, task_ids: list[str], principal: str | None
                      ) -> list[Awaitable[None]]:
        """The creating writes of a whole chain listing ``task_ids`` in order, head last."""
        writes = [self._create(chain.key(start // PAGE_SIZE), _page_value(
            (start + i, task_id) for i, task_id in enumerate(task_ids[start:start + PAGE_SIZE])
        ), principal) for start in range(0, len(task_ids), PAGE_SIZE)]
        head = Head(len(task_ids), len(task_ids)).value()
        return [*writes, self._create(chain.key("head"), head, principal)]

    async def _create(self, key: str, value: Any, principal: str | None) -> None:
        # a conflict: another migration (or a creator after one) got there first
        with contextlib.suppress(SessionConflictError):
            await self._records.put(key, value, principal=principal, create=True)

    async def _create_all(self, writes: Iterable[Awaitable[None]]) -> None:
        batch: list[Awaitable[None]] = []
        for write in writes:
            batch.append(write)
            if len(batch) == _MIGRATION_WRITES:
                await asyncio.gather(*batch)
                batch = []
        await asyncio.gather(*batch)

    async def _write(self, key: str, value: Any, principal: str | None,
                     current: StoredRecordLike | None) -> None:
        """Write over exactly ``current`` (create when it is ``None``), else conflict."""
        if current is None:
            await self._records.put(key, value, principal=principal, create=True)
        else:
            await self._records.put(key, value, principal=principal,
                                    expected_version=current.version)

    async def _reserve(self, chain: Chain, principal: str | None, task_id: str) -> int:
        """A new sequence number of the chain (its head counting the entry to come)."""
        migrated = False
        for _ in range(_RETRIES):
            record = await self._records.get(chain.key("head"), principal=principal)
            if record is None and not migrated:
                migrated = True  # a fresh head must not hide the first format's entries
                if await self.migrate(principal):
                    continue
            head = Head.of(record)
            try:
                await self._write(chain.key("head"), Head(head.next + 1, head.count + 1).value(),
                                  principal, record)
            except SessionConflictError:
                continue
            return head.next
        raise ConcurrentTaskModificationError(task_id)

    async def _update_head(self, chain: Chain, principal: str | None, task_id: str,
                           change: Callable[[Head], Head]) -> None:
        for _ in range(_RETRIES):
            record = await self._records.get(chain.key("head"), principal=principal)
            if record is None:
                return
            try:
                await self._write(chain.key("head"), change(Head.of(record)).value(), principal,
                                  record)
            except SessionConflictError:
                continue
            return
        raise ConcurrentTaskModificationError(task_id)

    async def _insert(self, chain: Chain, principal: str | None, entry: Entry) -> None:
        key = chain.key(entry[0] // PAGE_SIZE)
        for _ in range(_RETRIES):
            record = await self._records.get(key, principal=principal)
            entries = _entries(record)
            if entry in entries:
                return
            bisect.insort(entries, entry)  # numbers reserved together may arrive swapped
            try:
                await self._write(key, _page_value(entries), principal, record)
            except SessionConflictError:
                continue
            return
        raise ConcurrentTaskModificationError(entry[1])

    async def _drop(self, chain: Chain, principal: str | None, entry: Entry) -> bool:
        """Remove ``entry`` from its page; whether it was there."""
        key = chain.key(entry[0] // PAGE_SIZE)
        for _ in range(_RETRIES):
            record = await self._records.get(key, principal=principal)
            entries = _entries(record)
            if entry not in entries:
                return False
            entries.remove(entry)
            try:
                await self._write(key, _page_value(entries), principal, record)
            except SessionConflictError:
                continue
            return True
        raise ConcurrentTaskModificationError(entry[1])

    async def _find(self, chain: Chain, principal: str | None, task_id: str) -> int | None:
        """The newest sequence number listing ``task_id`` (reads the chain: for tasks
        written by the first format, whose records name no sequence numbers)."""
        head = await self.head(chain, principal)
        async for _, entries in self.pages(chain, principal, head.next):
            for seq, listed in entries:
                if listed == task_id:
                    return seq
        return None
