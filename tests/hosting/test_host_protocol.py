"""The Host contract: both hosts satisfy it; cancel and subscribe reach a running turn."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from hosting_flows import Gate, build

from checkflow.agents import AgentResponse, AgentRunUpdateEvent, ChatMessage, ScriptedAgent
from checkflow.errors import NoCheckpointsError, SessionConflictError
from checkflow.hosting import AgentHost, Host, HostedRun, WorkflowHost
from checkflow.sessions import FileSessionStore
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import OutputEvent, RunStatus, WorkflowEvent


def test_both_hosts_satisfy_the_host_protocol(host: WorkflowHost) -> None:
    assert isinstance(host, Host)
    assert isinstance(AgentHost(ScriptedAgent("a", ["hi"])), Host)


async def test_describe_names_the_workflow_and_its_input(host: WorkflowHost) -> None:
    described = await host.describe()
    assert described.name == "shouter"
    assert str in described.input_types and described.checkpoints
    assert not described.chat_input
    agent = await AgentHost(ScriptedAgent("greeter", ["hi"])).describe()
    assert (agent.name, agent.chat_input, agent.checkpoints) == ("greeter", True, False)


async def _held_run(host: WorkflowHost, gate: Gate, conversation: str = "c") -> asyncio.Task:
    task = asyncio.ensure_future(host.run(conversation, message="hold"))
    await asyncio.wait_for(gate.entered.wait(), 10)
    return task


async def test_cancel_from_another_task_stops_a_gated_run_and_keeps_the_last_good_head(
    file_host: WorkflowHost, gate: Gate
) -> None:
    before = await file_host.run("c", message="one")
    held = await _held_run(file_host, gate)
    assert await file_host.cancel("c") is True
    result = await asyncio.wait_for(held, 10)
    assert result.status is RunStatus.CANCELLED
    assert result.resume_token == before.resume_token
    state = await file_host.get_conversation("c")
    assert state.resume_token == before.resume_token and state.outputs == ["ONE"]
    gate.release.set()
    after = await file_host.run("c", message="two")  # the lease was released
    assert after.status is RunStatus.IDLE and after.outputs == ["TWO"]
    assert (await file_host.get_conversation("c")).outputs == ["ONE", "TWO"]


async def test_cancel_of_a_streamed_run_ends_its_stream_cancelled(
    host: WorkflowHost, gate: Gate
) -> None:
    stream = await host.run("c", message="hold", stream=True)
    seen: list[WorkflowEvent] = []

    async def consume() -> None:
        async for event in stream:
            seen.append(event)

    consumer = asyncio.ensure_future(consume())
    await asyncio.wait_for(gate.entered.wait(), 10)
    assert await host.cancel("c")
    await asyncio.wait_for(consumer, 10)
    assert (await stream.get_result()).status is RunStatus.CANCELLED
    assert not any(isinstance(e, OutputEvent) for e in seen)


async def test_cancel_with_nothing_running_is_false(host: WorkflowHost) -> None:
    assert await host.cancel("nobody") is False
    await host.run("c", message="x")
    assert await host.cancel("c") is False


async def test_cancel_reaches_a_run_of_another_host_at_its_next_lease_renewal(
    tmp_path: Path, gate: Gate
) -> None:
    def make() -> WorkflowHost:
        return WorkflowHost(build(gate), session_store=FileSessionStore(tmp_path / "s"),
                            checkpoint_storage=FileCheckpointStorage(tmp_path / "c"),
                            lease_seconds=30, renew_seconds=0.2)

    owner, other = make(), make()
    before = await owner.run("c", message="one")
    held = await _held_run(owner, gate)
    assert await other.cancel("c") is True  # recorded in the session
    result = await asyncio.wait_for(held, 10)  # honoured within a renewal interval or two
    assert result.status is RunStatus.CANCELLED
    assert result.resume_token == before.resume_token
    assert (await other.run("c", message="two")).outputs == ["TWO"]
    session = await owner.session_store.get(next(
        s for s in await owner.session_store.list_session_ids() if s.startswith("conv")))
    assert session is not None and "cancel" not in session.state and "lease" not in session.state


async def test_subscribe_replays_after_a_sequence_then_follows_live_then_ends(
    host: WorkflowHost, gate: Gate
) -> None:
    held = await _held_run(host, gate)
    followed: list[WorkflowEvent] = []
    replayed = asyncio.Event()

    async def follow() -> None:
        async for event in host.subscribe("c", after=2):
            followed.append(event)
            if len(followed) == 2:
                replayed.set()

    follower = asyncio.ensure_future(follow())
    await asyncio.wait_for(replayed.wait(), 10)  # the two logged past 2: superstep, invoke
    gate.release.set()
    result = await asyncio.wait_for(held, 10)
    await asyncio.wait_for(follower, 10)  # it ended with the run
    assert result.result is not None
    expected = [e.sequence for e in result.result.events if e.sequence > 2]
    got = [e.sequence for e in followed]
    assert got == expected and got[0] == 3
    assert all(a < b for a, b in itertools.pairwise(got))


async def test_subscribe_with_no_active_run_ends_at_once(host: WorkflowHost) -> None:
    assert [e async for e in host.subscribe("nothing-runs")] == []


async def test_every_event_of_a_run_has_a_strictly_increasing_sequence_and_utc_time(
    host: WorkflowHost,
) -> None:
    stream = await host.run("c", message="x", stream=True)
    events = [event async for event in stream]
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert all(e.timestamp.utcoffset() is not None and e.timestamp.utcoffset().total_seconds()
               == 0 for e in events)
    assert all(a.timestamp <= b.timestamp for a, b in itertools.pairwise(events))


async def test_list_conversations_is_per_principal(host: WorkflowHost) -> None:
    await host.run("b", message="x", principal="ann")
    await host.run("a", message="x", principal="ann")
    await host.run("a", message="x", principal="bob")
    assert await host.list_conversations(principal="ann") == ["a", "b"]
    assert await host.list_conversations(principal="bob") == ["a"]
    await host.delete("a", principal="ann")
    assert await host.list_conversations(principal="ann") == ["b"]


async def test_records_are_durable_versioned_and_scoped_by_principal(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "s")
    records = WorkflowHost(build(), session_store=store).records("a2a")
    version = await records.put("task-1", {"state": "working"}, principal="ann", create=True)
    with pytest.raises(SessionConflictError):
        await records.put("task-1", {"state": "again"}, principal="ann", create=True)
    assert await records.get("task-1", principal="bob") is None
    again = WorkflowHost(build(), session_store=FileSessionStore(tmp_path / "s")).records("a2a")
    found = await again.get("task-1", principal="ann")
    assert found is not None and found.value == {"state": "working"} and found.version == version
    await again.put("task-1", {"state": "done"}, principal="ann", expected_version=version)
    with pytest.raises(SessionConflictError):
        await again.put("task-1", {"state": "lost"}, principal="ann", expected_version=version)
    await again.delete("task-1", principal="ann")
    assert await records.get("task-1", principal="ann") is None
    assert await WorkflowHost(build(), session_store=store).list_conversations() == []


async def test_an_agent_host_answers_the_host_shaped_run() -> None:
    host = AgentHost(ScriptedAgent("greeter", ["hello", "again"]))
    result = await host.run("c", message="hi")
    assert result.status is RunStatus.IDLE
    (response,) = result.outputs
    assert isinstance(response, AgentResponse) and response.text == "hello"
    stream = await host.run("c", message=[ChatMessage("user", "hi")], stream=True)
    assert isinstance(stream, HostedRun)
    events = [event async for event in stream]
    assert any(isinstance(e, AgentRunUpdateEvent) for e in events)
    output = next(e for e in events if isinstance(e, OutputEvent))
    assert output.data.text == "again"
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert (await stream.get_result()).outputs[0].text == "again"
    assert await host.list_conversations() == ["c"]


async def test_an_agent_host_has_no_checkpoints_or_requests() -> None:
    host = AgentHost(ScriptedAgent("greeter", ["hello"]))
    await host.run("c", message="hi")
    with pytest.raises(NoCheckpointsError, match="agent host"):
        await host.get_checkpoint("c")
    with pytest.raises(NoCheckpointsError):
        await host.run("c", message="hi", from_snapshot="s-1")
    with pytest.raises(ValueError, match="no pending requests"):
        await host.run("c", responses={"r": True})


async def test_an_event_is_shown_with_its_sequence_and_iso_timestamp(host: WorkflowHost) -> None:
    from checkflow.hosting._views import event_view

    result = await host.run("c", message="x")
    assert result.result is not None
    shown = event_view(result.result.events[0])
    assert shown["sequence"] == 1 and "_time" not in shown
    assert shown["timestamp"].endswith("+00:00")
