"""Response records: round-trip, principal scoping and compare-and-swap writes."""

from __future__ import annotations

import pytest
from record_fakes import FakeRecordStore

from checkflow.adapters.foundry._records import ResponseRecord, ResponseStore
from checkflow.errors import SessionConflictError


def _record(**fields: object) -> ResponseRecord:
    base: dict = {"id": "resp_1", "conversation_id": "conv_1", "principal": "alice",
                  "status": "completed", "created_at": 1, "model": "m", "snapshot_id": "s1",
                  "output": [{"type": "message", "id": "msg_1"}], "pending_calls": ["r1"],
                  "events": [{"type": "response.created", "sequence_number": 1}]}
    return ResponseRecord(**{**base, **fields})


async def test_a_record_round_trips() -> None:
    store = ResponseStore(FakeRecordStore())
    await store.create(_record())
    loaded, _ = await store.load("resp_1", principal="alice")
    assert loaded == _record()


async def test_another_principal_does_not_see_the_record() -> None:
    store = ResponseStore(FakeRecordStore())
    await store.create(_record())
    assert await store.load("resp_1", principal="bob") is None
    assert await store.load("resp_1", principal=None) is None


async def test_creating_an_existing_id_conflicts() -> None:
    store = ResponseStore(FakeRecordStore())
    await store.create(_record())
    with pytest.raises(SessionConflictError):
        await store.create(_record(status="failed"))


async def test_a_replace_at_a_stale_version_conflicts_and_changes_nothing() -> None:
    store = ResponseStore(FakeRecordStore())
    version = await store.create(_record(status="in_progress"))
    await store.replace(_record(status="completed"), version)
    with pytest.raises(SessionConflictError):
        await store.replace(_record(status="cancelled"), version)
    loaded, _ = await store.load("resp_1", principal="alice")
    assert loaded.status == "completed"


async def test_a_deleted_record_is_gone() -> None:
    store = ResponseStore(FakeRecordStore())
    await store.create(_record())
    await store.delete("resp_1", principal="alice")
    assert await store.load("resp_1", principal="alice") is None
