"""The A2A task index: one ListTasks page and the waiting-task lookup read what a page needs.

Every test runs the real ``A2ATaskStore`` over a real ``RecordStore`` on a memory
``SessionStore``, wrapped to count (and, for races, hold) what the store reads and writes.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

pytest.importorskip("a2a")

from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError
from google.protobuf import json_format

from checkflow.adapters.a2a._index import ALL, LEGACY_KEY, PAGE_SIZE, Chain
from checkflow.adapters.a2a._store import PRINCIPAL_KEY, SCAN_LIMIT, A2ATaskStore
from checkflow.errors import SessionConflictError
from checkflow.hosting import RecordStore
from checkflow.sessions import InMemorySessionStore

COMPLETED = a2a_pb2.TASK_STATE_COMPLETED
INPUT_REQUIRED = a2a_pb2.TASK_STATE_INPUT_REQUIRED
WORKING = a2a_pb2.TASK_STATE_WORKING


class Counting:
    """``host.records("a2a")`` as it is, recording every key read and written; ``hold`` runs
    before each write (to stage a race), and conflicts are counted per key."""

    def __init__(self) -> None:
        self.inner = RecordStore(InMemorySessionStore(), "a2a")
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.conflicts: list[str] = []
        self.hold: Callable[[str], Awaitable[None]] | None = None
        self.written: Callable[[str], None] | None = None

    async def get(self, key: str, *, principal: str | None = None) -> Any:
        self.reads.append(key)
        return await self.inner.get(key, principal=principal)

    async def put(self, key: str, value: Any, *, principal: str | None = None,
                  expected_version: str | None = None, create: bool = False) -> str:
        if self.hold is not None:
            await self.hold(key)
        try:
            version = await self.inner.put(key, value, principal=principal,
                                           expected_version=expected_version, create=create)
        except SessionConflictError:
            self.conflicts.append(key)
            raise
        finally:
            if self.written is not None:
                self.written(key)
        self.writes.append(key)
        return version

    async def delete(self, key: str, *, principal: str | None = None) -> None:
        await self.inner.delete(key, principal=principal)

    def task_reads(self) -> list[str]:
        return [k for k in self.reads if k.startswith("task/")]

    def reset(self) -> None:
        self.reads.clear()
        self.writes.clear()


def ctx(principal: str | None = None) -> ServerCallContext:
    return ServerCallContext(state={PRINCIPAL_KEY: principal} if principal else {})


def task(task_id: str, context_id: str = "c1", state: int = WORKING,
         at: int | None = None) -> a2a_pb2.Task:
    made = a2a_pb2.Task(id=task_id, context_id=context_id,
                        status=a2a_pb2.TaskStatus(state=state))  # type: ignore[arg-type]
    if at is not None:
        made.status.timestamp.FromSeconds(at)
    return made


async def create(store: A2ATaskStore, t: a2a_pb2.Task, principal: str | None = None
                 ) -> TaskVersion:
    return await store.save(t, event=None, prev=None, prev_version=TaskVersion.MISSING,
                            context=ctx(principal))


def ids(response: a2a_pb2.ListTasksResponse | list[a2a_pb2.Task]) -> list[str]:
    tasks = response.tasks if isinstance(response, a2a_pb2.ListTasksResponse) else response
    return [t.id for t in tasks]


BIG, CONTEXTS = 1500, 15


async def big_store() -> tuple[A2ATaskStore, Counting, list[str]]:
    """1,500 tasks of one principal in 15 contexts (every tenth input-required), oldest
    first; the counter reset."""
    records = Counting()
    store = A2ATaskStore(records)
    made = []
    for i in range(BIG):
        made.append(f"t{i:04d}")
        await create(store, task(made[-1], f"c{i % CONTEXTS}",
                                 INPUT_REQUIRED if i % 10 == 0 else COMPLETED, at=i))
    records.reset()
    return store, records, made


async def page_through(store: A2ATaskStore, records: Counting,
                       request: a2a_pb2.ListTasksRequest, *, max_reads: int,
                       principal: str | None = None) -> tuple[list[str], int]:
    """Every task the cursor leads to, and the number of calls; no call reads more than
    ``max_reads`` records."""
    seen: list[str] = []
    calls = 0
    while True:
        records.reset()
        page = await store.list(request, ctx(principal))
        calls += 1
        assert len(records.reads) <= max_reads, (calls, len(records.reads))
        seen += ids(page)
        if not page.next_page_token:
            return seen, calls
        request.page_token = page.next_page_token


async def test_one_page_of_1500_tasks_reads_one_page_and_paging_returns_each_once() -> None:
    store, records, made = await big_store()
    page = await store.list(a2a_pb2.ListTasksRequest(page_size=50), ctx())
    assert ids(page) == made[::-1][:50] and page.total_size == BIG and page.next_page_token
    # the chain's head, one index page and the page's 50 task records; never the history
    assert len(records.task_reads()) == 50
    assert len(records.reads) == 52
    seen, calls = await page_through(store, records, a2a_pb2.ListTasksRequest(page_size=100),
                                     max_reads=100 + 3)
    assert seen == made[::-1] and calls == BIG // 100  # each task once, newest first


async def test_a_context_lists_and_answers_lookups_from_its_own_records_only() -> None:
    store, records, made = await big_store()
    mine = [t for i, t in enumerate(made) if i % CONTEXTS == 0]
    own = {Chain("c0").key("head"), *(Chain("c0").key(p) for p in range(2)),
           *(f"task/{t}" for t in mine)}
    listed = await store.list(a2a_pb2.ListTasksRequest(context_id="c0", page_size=20), ctx())
    assert ids(listed) == mine[::-1][:20] and listed.total_size == len(mine)
    assert set(records.reads) <= own and len(records.reads) == 20 + 2
    records.reset()
    assert ids(await store.context_tasks("c0", ctx())) == mine
    assert set(records.reads) <= own and len(records.task_reads()) == len(mine)
    records.reset()
    newest = await store.newest_task("c0", ctx())
    assert newest is not None and newest.id == mine[-1]
    assert records.reads == [Chain("c0").key("head"), Chain("c0").key(0), f"task/{mine[-1]}"]
    records.reset()
    waiting = await store.list(a2a_pb2.ListTasksRequest(context_id="c0", status=INPUT_REQUIRED),
                               ctx())
    assert ids(waiting) == [t for i, t in enumerate(made) if i % 30 == 0][::-1]
    assert set(records.reads) <= own


async def test_filters_by_context_status_and_time() -> None:
    store = A2ATaskStore(Counting())
    for i in range(8):
        await create(store, task(f"t{i}", "a" if i % 2 else "b",
                                 INPUT_REQUIRED if i % 3 == 0 else COMPLETED, at=100 + i))
    everything = await store.list(a2a_pb2.ListTasksRequest(), ctx())
    assert ids(everything) == [f"t{i}" for i in range(7, -1, -1)] and everything.total_size == 8
    assert ids(await store.list(a2a_pb2.ListTasksRequest(context_id="a"), ctx())) == [
        "t7", "t5", "t3", "t1"]
    waiting = await store.list(a2a_pb2.ListTasksRequest(status=INPUT_REQUIRED), ctx())
    assert ids(waiting) == ["t6", "t3", "t0"]
    assert waiting.total_size == 3  # one call covered the whole chain: exact
    both = await store.list(a2a_pb2.ListTasksRequest(context_id="a", status=INPUT_REQUIRED),
                            ctx())
    assert ids(both) == ["t3"]
    recent = a2a_pb2.ListTasksRequest(status=COMPLETED)
    recent.status_timestamp_after.FromSeconds(104)
    assert ids(await store.list(recent, ctx())) == ["t7", "t5", "t4"]
    paged = await store.list(a2a_pb2.ListTasksRequest(status=INPUT_REQUIRED, page_size=2),
                             ctx())
    assert ids(paged) == ["t6", "t3"] and paged.next_page_token
    assert paged.total_size == 8  # not the whole chain: the chain's count, an upper bound
    rest = await store.list(a2a_pb2.ListTasksRequest(
        status=INPUT_REQUIRED, page_size=2, page_token=paged.next_page_token), ctx())
    assert ids(rest) == ["t0"] and not rest.next_page_token


async def test_a_filter_matching_little_reads_a_bounded_number_of_records_per_call() -> None:
    records = Counting()
    store = A2ATaskStore(records)
    for i in range(450):
        await create(store, task(f"t{i:03d}", "c", WORKING if i % 150 == 0 else COMPLETED))
    seen, calls = await page_through(store, records, a2a_pb2.ListTasksRequest(status=WORKING),
                                     max_reads=SCAN_LIMIT + 4)
    assert seen == ["t300", "t150", "t000"]
    assert calls == 3  # 200 + 200 + 50 records: short pages, each with a cursor to go on


@pytest.mark.parametrize("token", [
    "%%%", "bm90IGpzb24", base64.urlsafe_b64encode(b'{"before": -1, "query": "x"}').decode(),
    base64.urlsafe_b64encode(b'{"before": "3"}').decode(), base64.urlsafe_b64encode(
        b"[1, 2]").decode()])
async def test_an_invalid_page_token_is_invalid_params(token: str) -> None:
    store = A2ATaskStore(Counting())
    await create(store, task("t1"))
    with pytest.raises(InvalidParamsError, match="invalid page token"):
        await store.list(a2a_pb2.ListTasksRequest(page_token=token), ctx())


async def test_a_page_token_of_another_query_is_invalid_params() -> None:
    store = A2ATaskStore(Counting())
    for i in range(3):
        await create(store, task(f"t{i}", "a"))
    page = await store.list(a2a_pb2.ListTasksRequest(page_size=1), ctx())
    with pytest.raises(InvalidParamsError, match="another query"):
        await store.list(a2a_pb2.ListTasksRequest(page_size=1, context_id="a",
                                                  page_token=page.next_page_token), ctx())


@pytest.mark.parametrize("key", [ALL.key("head"), ALL.key(0), Chain("c").key("head"),
                                 Chain("c").key(0)], ids=["head", "page", "context-head",
                                                          "context-page"])
async def test_two_concurrent_creators_in_one_principal_are_both_indexed(key: str) -> None:
    records = Counting()
    store = A2ATaskStore(records)
    await create(store, task("t0", "c"))  # the chains exist: the race is on an update
    second_wrote = asyncio.Event()
    writers = 0

    async def hold(written: str) -> None:
        nonlocal writers
        if written == key:
            writers += 1
            if writers == 1:  # the first writer waits until the second has written
                await asyncio.wait_for(second_wrote.wait(), 10)

    def written(done: str) -> None:
        if done == key and writers == 2:
            second_wrote.set()

    records.hold, records.written = hold, written
    await asyncio.gather(create(store, task("t1", "c")), create(store, task("t2", "c")))
    assert records.conflicts == [key]  # the first writer lost once, then retried
    listed = await store.list(a2a_pb2.ListTasksRequest(), ctx())
    assert sorted(ids(listed)) == ["t0", "t1", "t2"] and listed.total_size == 3
    assert sorted(ids(await store.context_tasks("c", ctx()))) == ["t0", "t1", "t2"]


async def test_the_loser_of_two_creators_of_one_task_leaves_no_entry() -> None:
    store = A2ATaskStore(Counting())
    outcomes = await asyncio.gather(create(store, task("t1")), create(store, task("t1")),
                                    return_exceptions=True)
    assert sum(isinstance(o, ConcurrentTaskModificationError) for o in outcomes) == 1
    listed = await store.list(a2a_pb2.ListTasksRequest(), ctx())
    assert ids(listed) == ["t1"] and listed.total_size == 1
    in_context = await store.list(a2a_pb2.ListTasksRequest(context_id="c1"), ctx())
    assert ids(in_context) == ["t1"] and in_context.total_size == 1


async def test_updates_write_only_the_task_record_and_keep_it_listed() -> None:
    records = Counting()
    store = A2ATaskStore(records)
    version = await create(store, task("t1"))
    await create(store, task("t2"))
    records.reset()
    version = await store.save(task("t1", state=INPUT_REQUIRED), event=None, prev=None,
                               prev_version=version, context=ctx())
    stored = await store.get("t1", ctx())
    assert stored is not None
    await store.save(task("t1", state=a2a_pb2.TASK_STATE_CANCELED), event=None, prev=None,
                     prev_version=stored.version, context=ctx())
    assert records.writes == ["task/t1", "task/t1"]
    assert ids(await store.list(a2a_pb2.ListTasksRequest(), ctx())) == ["t2", "t1"]
    newest = await store.newest_task("c1", ctx())
    assert newest is not None and newest.id == "t2"


async def test_delete_unlists_and_a_missing_record_is_skipped() -> None:
    records = Counting()
    store = A2ATaskStore(records)
    for i in range(4):
        await create(store, task(f"t{i}", "a" if i < 3 else "b"))
    await store.delete("t1", ctx())
    listed = await store.list(a2a_pb2.ListTasksRequest(), ctx())
    assert ids(listed) == ["t3", "t2", "t0"] and listed.total_size == 3
    assert ids(await store.context_tasks("a", ctx())) == ["t0", "t2"]
    page = await records.inner.get(ALL.key(0))
    assert page is not None and [e[1] for e in page.value["entries"]] == ["t0", "t2", "t3"]
    await records.inner.delete("task/t2")  # as a creation that crashed before its record
    assert ids(await store.list(a2a_pb2.ListTasksRequest(), ctx())) == ["t3", "t0"]
    newest = await store.newest_task("a", ctx())
    assert newest is not None and newest.id == "t0"


async def test_principals_keep_separate_chains() -> None:
    store = A2ATaskStore(Counting())
    await create(store, task("t1", "same"), principal="alice")
    await create(store, task("t2", "same"), principal="bob")
    assert ids(await store.list(a2a_pb2.ListTasksRequest(), ctx("alice"))) == ["t1"]
    assert ids(await store.context_tasks("same", ctx("bob"))) == ["t2"]
    assert await store.newest_task("same", ctx()) is None


async def write_first_format(records: Counting, count: int, principal: str | None = None
                             ) -> list[str]:
    """Tasks as the first format wrote them: records without sequence numbers, and one
    index record listing ``[task_id, context_id]`` in creation order."""
    made = [f"old{i:03d}" for i in range(count)]
    for i, task_id in enumerate(made):
        old = task(task_id, f"c{i % 3}", COMPLETED)
        await records.inner.put(f"task/{task_id}", {
            "task": json_format.MessageToDict(old), "context_id": old.context_id,
            "updated_ns": i}, principal=principal, create=True)
    await records.inner.put(LEGACY_KEY, {"tasks": [[t, f"c{i % 3}"] for i, t in
                                                   enumerate(made)]},
                            principal=principal, create=True)
    return made


async def test_the_first_index_format_is_migrated_on_the_first_list() -> None:
    records = Counting()
    store = A2ATaskStore(records)
    made = await write_first_format(records, 250, principal="alice")
    seen, _ = await page_through(store, records, a2a_pb2.ListTasksRequest(page_size=100),
                                 max_reads=PAGE_SIZE + 10, principal="alice")
    assert seen == made[::-1]
    assert await records.inner.get(LEGACY_KEY, principal="alice") is None
    page = await store.list(a2a_pb2.ListTasksRequest(page_size=100), ctx("alice"))
    assert ids(page) == made[::-1][:100] and page.total_size == 250
    assert ids(await store.context_tasks("c1", ctx("alice"))) == made[1::3]
    await create(store, task("new", "c1"), principal="alice")
    assert ids(await store.list(a2a_pb2.ListTasksRequest(page_size=2), ctx("alice"))) == [
        "new", made[-1]]
    newest = await store.newest_task("c1", ctx("alice"))
    assert newest is not None and newest.id == "new"
    await store.delete(made[1], ctx("alice"))  # a first-format record: its entries are found
    assert made[1] not in ids(await store.context_tasks("c1", ctx("alice")))
    listed = await store.list(a2a_pb2.ListTasksRequest(page_size=100), ctx("alice"))
    assert listed.total_size == 250


async def test_the_first_index_format_is_migrated_on_the_first_write() -> None:
    records = Counting()
    store = A2ATaskStore(records)
    made = await write_first_format(records, 5)
    await create(store, task("new", "c2"))
    assert await records.inner.get(LEGACY_KEY) is None
    assert ids(await store.list(a2a_pb2.ListTasksRequest(), ctx())) == ["new", *made[::-1]]
    assert ids(await store.context_tasks("c2", ctx())) == [made[2], "new"]
    in_c0 = await store.list(a2a_pb2.ListTasksRequest(context_id="c0"), ctx())
    assert ids(in_c0) == [made[3], made[0]] and in_c0.total_size == 2
