"""The durable A2A task store: versioned writes, cancel precedence, principal scope, listing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("a2a")

from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError

from checkflow.adapters.a2a._store import PRINCIPAL_KEY, A2ATaskStore
from checkflow.errors import SessionConflictError
from checkflow.state import decode, encode


@dataclass(frozen=True)
class Record:
    value: Any
    version: str


class FakeRecords:
    """Exactly the ``host.records(ns)`` interface, values copied through the state codec."""

    def __init__(self) -> None:
        self.data: dict[tuple[str | None, str], tuple[bytes, str]] = {}
        self._n = 0

    async def get(self, key: str, *, principal: str | None = None) -> Record | None:
        found = self.data.get((principal, key))
        return None if found is None else Record(decode(found[0]), found[1])

    async def put(self, key: str, value: Any, *, principal: str | None = None,
                  expected_version: str | None = None, create: bool = False) -> str:
        current = self.data.get((principal, key))
        actual = current[1] if current else None
        if (create and current is not None) or (
                expected_version is not None and expected_version != actual):
            raise SessionConflictError(key, expected_version=expected_version,
                                       actual_version=actual)
        self._n += 1
        self.data[(principal, key)] = (encode(value), f"v{self._n}")
        return f"v{self._n}"

    async def delete(self, key: str, *, principal: str | None = None) -> None:
        self.data.pop((principal, key), None)


def ctx(principal: str | None = None) -> ServerCallContext:
    return ServerCallContext(state={PRINCIPAL_KEY: principal} if principal else {})


def task(task_id: str, context_id: str = "c1",
         state: int = a2a_pb2.TASK_STATE_WORKING) -> a2a_pb2.Task:
    return a2a_pb2.Task(id=task_id, context_id=context_id,
                        status=a2a_pb2.TaskStatus(state=state))  # type: ignore[arg-type]


async def create(store: A2ATaskStore, t: a2a_pb2.Task, principal: str | None = None
                 ) -> TaskVersion:
    return await store.save(t, event=None, prev=None, prev_version=TaskVersion.MISSING,
                            context=ctx(principal))


async def test_a_saved_task_reads_back_with_its_version() -> None:
    store = A2ATaskStore(FakeRecords())
    version = await create(store, task("t1"))
    stored = await store.get("t1", ctx())
    assert stored is not None and stored.task == task("t1") and stored.version == version


async def test_a_write_from_a_stale_version_is_a_concurrent_modification() -> None:
    store = A2ATaskStore(FakeRecords())
    first = await create(store, task("t1"))
    await store.save(task("t1", state=a2a_pb2.TASK_STATE_INPUT_REQUIRED), event=None,
                     prev=None, prev_version=first, context=ctx())
    with pytest.raises(ConcurrentTaskModificationError):
        await store.save(task("t1", state=a2a_pb2.TASK_STATE_COMPLETED), event=None,
                         prev=None, prev_version=first, context=ctx())
    stored = await store.get("t1", ctx())
    assert stored is not None and stored.task.status.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED


async def test_creating_an_existing_task_is_a_concurrent_modification() -> None:
    store = A2ATaskStore(FakeRecords())
    await create(store, task("t1"))
    with pytest.raises(ConcurrentTaskModificationError):
        await create(store, task("t1", state=a2a_pb2.TASK_STATE_COMPLETED))


async def test_of_two_racing_creators_exactly_one_wins() -> None:
    store = A2ATaskStore(FakeRecords())
    outcomes = await asyncio.gather(create(store, task("t1")), create(store, task("t1")),
                                    return_exceptions=True)
    assert sum(isinstance(o, ConcurrentTaskModificationError) for o in outcomes) == 1
    listed = await store.list(a2a_pb2.ListTasksRequest(), ctx())
    assert [t.id for t in listed.tasks] == ["t1"]


async def test_a_cancel_overwrites_a_running_version_but_not_a_terminal_one() -> None:
    store = A2ATaskStore(FakeRecords())
    first = await create(store, task("t1"))
    await store.save(task("t1", state=a2a_pb2.TASK_STATE_WORKING), event=None, prev=None,
                     prev_version=first, context=ctx())
    # the cancel was derived from the first version, yet wins over the newer running one
    await store.save(task("t1", state=a2a_pb2.TASK_STATE_CANCELED), event=None, prev=None,
                     prev_version=first, context=ctx())
    with pytest.raises(ConcurrentTaskModificationError):
        await store.save(task("t1", state=a2a_pb2.TASK_STATE_CANCELED), event=None,
                         prev=None, prev_version=first, context=ctx())
    with pytest.raises(ConcurrentTaskModificationError):
        await store.save(task("nope", state=a2a_pb2.TASK_STATE_CANCELED), event=None,
                         prev=None, prev_version=first, context=ctx())


async def test_another_principal_never_reads_lists_or_writes_a_task() -> None:
    store = A2ATaskStore(FakeRecords())
    version = await create(store, task("t1"), principal="alice")
    assert await store.get("t1", ctx("bob")) is None
    assert list((await store.list(a2a_pb2.ListTasksRequest(), ctx("bob"))).tasks) == []
    with pytest.raises(ConcurrentTaskModificationError):
        await store.save(task("t1", state=a2a_pb2.TASK_STATE_COMPLETED), event=None,
                         prev=None, prev_version=version, context=ctx("bob"))
    assert await store.get("t1", ctx("alice")) is not None


async def test_listing_is_newest_first_filtered_and_paged_by_cursor() -> None:
    store = A2ATaskStore(FakeRecords())
    for i in range(5):
        await create(store, task(f"t{i}", context_id="a" if i % 2 == 0 else "b",
                                 state=a2a_pb2.TASK_STATE_COMPLETED if i < 3
                                 else a2a_pb2.TASK_STATE_WORKING))
    everything = await store.list(a2a_pb2.ListTasksRequest(), ctx())
    assert [t.id for t in everything.tasks] == ["t4", "t3", "t2", "t1", "t0"]
    in_a = await store.list(a2a_pb2.ListTasksRequest(context_id="a"), ctx())
    assert [t.id for t in in_a.tasks] == ["t4", "t2", "t0"]
    done = await store.list(a2a_pb2.ListTasksRequest(status=a2a_pb2.TASK_STATE_COMPLETED),
                            ctx())
    assert [t.id for t in done.tasks] == ["t2", "t1", "t0"]
    seen: list[str] = []
    token = ""
    for _ in range(5):
        page = await store.list(a2a_pb2.ListTasksRequest(page_size=2, page_token=token), ctx())
        seen += [t.id for t in page.tasks]
        assert page.total_size == 5
        token = page.next_page_token
        if not token:
            break
    assert seen == ["t4", "t3", "t2", "t1", "t0"]


async def test_a_malformed_page_token_is_invalid_params() -> None:
    store = A2ATaskStore(FakeRecords())
    with pytest.raises(InvalidParamsError, match="page token"):
        await store.list(a2a_pb2.ListTasksRequest(page_token="%%%"), ctx())


async def test_context_tasks_and_delete() -> None:
    store = A2ATaskStore(FakeRecords())
    await create(store, task("t1", "c1"))
    await create(store, task("t2", "c2"))
    await create(store, task("t3", "c1"))
    assert [t.id for t in await store.context_tasks("c1", ctx())] == ["t1", "t3"]
    await store.delete("t1", ctx())
    assert await store.get("t1", ctx()) is None
    assert [t.id for t in await store.context_tasks("c1", ctx())] == ["t3"]
