"""One run per conversation: the in-process busy set, the session lease across hosts, streams.

The first run is held on an explicit gate (an asyncio.Event the workflow awaits), never a sleep.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from hosting_flows import Gate, build

from checkflow.checkpoints import Checkpoint
from checkflow.errors import ConversationBusyError
from checkflow.hosting import WorkflowHost
from checkflow.hosting._keys import ConversationKey
from checkflow.sessions import AgentSession, FileSessionStore, InMemorySessionStore
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage
from checkflow.workflows import RunStatus, WorkflowStatusEvent


async def _held(host: WorkflowHost, gate: Gate, conversation: str = "c-1") -> asyncio.Task:
    task = asyncio.create_task(host.run(conversation, message="hold"))
    await asyncio.wait_for(gate.entered.wait(), 10)
    return task


class CountingSessions(InMemorySessionStore):
    """An in-memory session store that counts its reads."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0

    async def get(self, session_id: str) -> AgentSession | None:
        self.gets += 1
        return await super().get(session_id)


class CountingCheckpoints(InMemoryCheckpointStorage):
    """An in-memory checkpoint storage that counts its loads."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0

    async def load(self, checkpoint_id: str) -> Checkpoint:
        self.loads += 1
        return await super().load(checkpoint_id)


async def test_a_second_run_on_a_busy_conversation_is_refused_at_once(
    host: WorkflowHost, gate: Gate
) -> None:
    first = await _held(host, gate)
    with pytest.raises(ConversationBusyError) as caught:
        await host.run("c-1", message="again")
    assert caught.value.retry_after >= 1
    gate.release.set()
    assert (await first).outputs == ["HOLD"]
    assert gate.runs == 1


async def test_a_run_on_an_existing_busy_conversation_is_refused_before_any_read(
    gate: Gate,
) -> None:
    sessions, storage = CountingSessions(), CountingCheckpoints()
    host = WorkflowHost(build(gate), session_store=sessions, checkpoint_storage=storage)
    await host.run("c-1", message="one")
    first = await _held(host, gate)
    reads = (sessions.gets, storage.loads)
    with pytest.raises(ConversationBusyError) as caught:
        await host.run("c-1", message="three")
    assert caught.value.retry_after >= 1
    assert (sessions.gets, storage.loads) == reads  # refused by the busy set alone
    gate.release.set()
    assert (await first).outputs == ["HOLD"]
    assert (await host.get_conversation("c-1")).outputs == ["ONE", "HOLD"]
    assert gate.runs == 1


async def test_twenty_simultaneous_requests_make_one_run_and_nineteen_refusals(
    host: WorkflowHost, gate: Gate
) -> None:
    await host.run("c-1", message="one")  # an existing conversation, with a head to load
    first = await _held(host, gate)
    outcomes = await asyncio.gather(
        *(host.run("c-1", message="hold") for _ in range(19)), return_exceptions=True
    )
    assert all(isinstance(o, ConversationBusyError) for o in outcomes)
    gate.release.set()
    await first
    assert gate.runs == 1
    assert (await host.get_conversation("c-1")).outputs == ["ONE", "HOLD"]


class GatedCommits(InMemoryCheckpointStorage):
    """An in-memory checkpoint storage whose first commit waits for the test's release."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def commit_snapshot(self, *args: Any, **kwargs: Any) -> Any:
        if not self.entered.is_set():
            self.entered.set()
            await asyncio.wait_for(self.release.wait(), 10)
        return await super().commit_snapshot(*args, **kwargs)


async def test_the_session_holds_no_checkpoint_reference_until_a_snapshot_commits() -> None:
    storage = GatedCommits()
    host = WorkflowHost(build(), checkpoint_storage=storage)
    run = asyncio.create_task(host.run("c-1", message="one"))
    await asyncio.wait_for(storage.entered.wait(), 10)
    session_id = ConversationKey(None, "c-1").session_id
    during = await host.session_store.get(session_id)
    assert during is not None and "lease" in during.state  # the run holds the conversation
    assert "checkpoint" not in during.state
    storage.release.set()
    result = await run
    after = await host.session_store.get(session_id)
    assert after is not None and result.resume_token is not None
    assert after.state["checkpoint"].head_snapshot_id == result.resume_token.snapshot_id


async def test_other_conversations_run_while_one_is_held(host: WorkflowHost, gate: Gate) -> None:
    first = await _held(host, gate)
    others = await asyncio.gather(*(host.run(f"c-{i}", message=f"m{i}") for i in range(2, 12)))
    assert [o.outputs for o in others] == [[f"M{i}"] for i in range(2, 12)]
    gate.release.set()
    await first


async def test_a_second_host_on_the_same_sessions_sees_the_lease(
    file_host: WorkflowHost, gate: Gate
) -> None:
    other = WorkflowHost(
        build(),
        session_store=file_host.session_store,
        checkpoint_storage=file_host.checkpoint_storage,
    )
    first = await _held(file_host, gate)
    with pytest.raises(ConversationBusyError) as caught:
        await other.run("c-1", message="again")
    assert caught.value.retry_after > 1  # the lease's remaining time
    gate.release.set()
    await first
    assert (await other.run("c-1", message="after")).outputs == ["AFTER"]


async def _plant_lease(host: WorkflowHost, owner: str, expires_in: float) -> None:
    """Write another host's lease into the conversation's session, as that host would."""
    session = await host.session_store.get(ConversationKey(None, "c-1").session_id)
    assert session is not None
    session.state["lease"] = {"owner": owner, "expires_at": time.time() + expires_in}
    await host.session_store.set(session)


async def test_an_expired_lease_of_a_vanished_host_is_taken_over(file_host: WorkflowHost) -> None:
    await file_host.run("c-1", message="one")
    await _plant_lease(file_host, "dead-host", expires_in=-1)
    assert (await file_host.run("c-1", message="two")).outputs == ["TWO"]


async def test_a_live_lease_of_another_host_refuses_the_run(file_host: WorkflowHost) -> None:
    await file_host.run("c-1", message="one")
    await _plant_lease(file_host, "other-host", expires_in=60)
    with pytest.raises(ConversationBusyError):
        await file_host.run("c-1", message="two")


async def test_the_conversation_is_free_again_after_a_refused_request(
    host: WorkflowHost,
) -> None:
    with pytest.raises(ValueError):
        await host.run("c-1", message="x", responses={"r": True})
    await host.run("c-1", message="one")
    with pytest.raises(Exception):  # noqa: B017 - any refusal; the point is what follows
        await host.run("c-1", message="two", from_snapshot="missing")
    assert (await host.run("c-1", message="three")).outputs == ["THREE"]


async def test_a_stream_yields_events_then_the_result(host: WorkflowHost) -> None:
    stream = await host.run("c-1", message="hi", stream=True)
    events = [event async for event in stream]
    result = await stream.get_result()
    assert isinstance(events[-1], WorkflowStatusEvent)
    assert result.outputs == ["HI"]
    assert (await host.get_conversation("c-1")).resume_token == result.resume_token


async def test_a_stream_holds_the_conversation_until_it_ends(host: WorkflowHost) -> None:
    stream = await host.run("c-1", message="hi", stream=True)
    with pytest.raises(ConversationBusyError):
        await host.run("c-1", message="again")
    await stream.get_result()
    assert (await host.run("c-1", message="again")).outputs == ["AGAIN"]


async def test_closing_a_stream_early_keeps_the_last_good_head_and_frees_it(
    host: WorkflowHost, gate: Gate
) -> None:
    first = await host.run("c-1", message="one")
    stream = await host.run("c-1", message="hold", stream=True)
    iterator = aiter(stream)
    await anext(iterator)
    await stream.aclose()
    state = await host.get_conversation("c-1")
    assert state.resume_token == first.resume_token
    assert state.outputs == ["ONE"]
    gate.release.set()
    assert (await host.run("c-1", message="two")).outputs == ["TWO"]


async def test_a_failed_streamed_run_reports_failed(host: WorkflowHost) -> None:
    stream = await host.run("c-1", message="boom", stream=True)
    _ = [event async for event in stream]
    result = await stream.get_result()
    assert result.status is RunStatus.FAILED
    assert (await host.run("c-1", message="fine")).outputs == ["FINE"]


async def test_a_run_longer_than_its_lease_keeps_renewing_it(
    file_host: WorkflowHost, gate: Gate
) -> None:
    short = WorkflowHost(build(gate), session_store=file_host.session_store,
                         checkpoint_storage=file_host.checkpoint_storage, lease_seconds=0.3)
    other = WorkflowHost(build(), session_store=file_host.session_store,
                         checkpoint_storage=file_host.checkpoint_storage)
    key = ConversationKey(None, "c-1")
    first = await _held(short, gate)
    taken = await short.session_store.get(key.session_id)
    assert taken is not None
    granted = taken.state["lease"]["expires_at"]
    deadline = time.monotonic() + 30
    while True:  # poll the store until renewals carried the lease past its first expiry
        stored = await short.session_store.get(key.session_id)
        assert stored is not None
        if stored.state["lease"]["expires_at"] > granted + 0.3:
            break
        assert time.monotonic() < deadline, "the lease was never renewed"
        await asyncio.sleep(0.02)
    with pytest.raises(ConversationBusyError):
        await other.run("c-1", message="meanwhile")
    gate.release.set()
    assert (await first).outputs == ["HOLD"]
    stored = await short.session_store.get(key.session_id)
    assert stored is not None and "lease" not in stored.state


class FlakySessions(InMemorySessionStore):
    """A session store whose next write fails once (a network blip) after ``fail_next()``."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.failed = asyncio.Event()

    def fail_next(self) -> None:
        self.armed = True

    async def set(
        self, session: AgentSession, *, expected_version: str | None = None, create: bool = False,
        durable: bool = True,
    ) -> str:
        if self.armed:
            self.armed = False
            self.failed.set()
            raise OSError("connection reset by peer")
        return await super().set(session, expected_version=expected_version, create=create,
                                 durable=durable)


async def test_a_failed_lease_renewal_neither_ends_the_run_nor_loses_its_result(
    gate: Gate,
) -> None:
    sessions = FlakySessions()
    host = WorkflowHost(build(gate), session_store=sessions, lease_seconds=0.3)
    first = await _held(host, gate)
    sessions.fail_next()  # the next write is a renewal: the run is held on the gate
    await asyncio.wait_for(sessions.failed.wait(), 10)
    gate.release.set()
    result = await first
    assert result.outputs == ["HOLD"]
    stored = await sessions.get(ConversationKey(None, "c-1").session_id)
    assert stored is not None and "lease" not in stored.state
    assert stored.state["checkpoint"].head_snapshot_id == result.resume_token.snapshot_id


class RacingSessions(InMemorySessionStore):
    """A session store whose first two reads of a session wait for each other (a barrier),
    so two hosts both see a brand-new conversation before either writes its lease."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier = asyncio.Barrier(2)
        self.reads = 0

    async def get(self, session_id: str) -> AgentSession | None:
        found = await super().get(session_id)
        self.reads += 1
        if self.reads <= 2:
            await asyncio.wait_for(self.barrier.wait(), 10)
        return found


async def test_two_hosts_creating_one_conversation_at_once_run_it_once() -> None:
    sessions, storage = RacingSessions(), InMemoryCheckpointStorage()
    a = WorkflowHost(build(), session_store=sessions, checkpoint_storage=storage)
    b = WorkflowHost(build(), session_store=sessions, checkpoint_storage=storage)
    outcomes = await asyncio.gather(a.run("new", message="a"), b.run("new", message="b"),
                                    return_exceptions=True)
    (won,) = [o for o in outcomes if not isinstance(o, BaseException)]
    (lost,) = [o for o in outcomes if isinstance(o, BaseException)]
    assert isinstance(lost, ConversationBusyError)
    state = await a.get_conversation("new")
    assert state.resume_token == won.resume_token  # the winner's record survived the race
    assert state.outputs == won.outputs
    assert (await b.run("new", message="after")).outputs == ["AFTER"]
    assert len(await storage.list_checkpoint_ids()) == 1


async def test_a_first_run_whose_host_died_leaves_nothing_in_the_way(host: WorkflowHost) -> None:
    key = ConversationKey(None, "c-1")
    workflow = await host.workflow()
    orphan = workflow.create_checkpoint(checkpoint_id=key.checkpoint_id(0),
                                        checkpoint_storage=host.checkpoint_storage)
    await workflow.run("lost", checkpoint=orphan)  # what the dead host committed
    dead = {"owner": "dead-host", "expires_at": time.time() - 1}
    await host.session_store.set(AgentSession(key.session_id, {"lease": dead}))
    result = await host.run("c-1", message="fresh")
    assert result.outputs == ["FRESH"]
    assert result.resume_token is not None
    assert result.resume_token.checkpoint_id == key.checkpoint_id(1)


class BarrierFileSessions(FileSessionStore):
    """A file session store whose first read waits at a barrier shared with another store, so
    two hosts both find a brand-new conversation missing before either writes."""

    def __init__(self, root: Path, barrier: asyncio.Barrier) -> None:
        super().__init__(root)
        self.barrier = barrier
        self.reads = 0

    async def get(self, session_id: str) -> AgentSession | None:
        found = await super().get(session_id)
        self.reads += 1
        if self.reads == 1:
            await asyncio.wait_for(self.barrier.wait(), 10)
        return found


class WatchedCheckpoints(FileCheckpointStorage):
    """File checkpoint storage that notes each load and commit a host makes through it."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.calls: list[str] = []

    async def load(self, checkpoint_id: str) -> Any:
        self.calls.append("load")
        return await super().load(checkpoint_id)

    async def commit_snapshot(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append("commit")
        return await super().commit_snapshot(*args, **kwargs)


async def test_two_hosts_on_separate_file_stores_creating_one_conversation_run_it_once(
    tmp_path: Path,
) -> None:
    barrier, gate = asyncio.Barrier(2), Gate()
    hosts = [
        WorkflowHost(
            build(gate),
            session_store=BarrierFileSessions(tmp_path / "sessions", barrier),
            checkpoint_storage=WatchedCheckpoints(tmp_path / "checkpoints"),
        )
        for _ in range(2)
    ]
    runs = [asyncio.create_task(h.run("new", message="hold")) for h in hosts]
    done, _ = await asyncio.wait(runs, return_when=asyncio.FIRST_COMPLETED)
    (lost,) = done  # the winner is held on the gate until the loser has its answer
    assert isinstance(lost.exception(), ConversationBusyError)
    loser = hosts[runs.index(lost)]
    assert loser.checkpoint_storage.calls == []  # type: ignore[attr-defined]
    gate.release.set()
    (won,) = [t for t in runs if t is not lost]
    assert (await won).outputs == ["HOLD"]
    assert gate.runs == 1
    state = await loser.get_conversation("new")
    assert state.resume_token == (await won).resume_token
