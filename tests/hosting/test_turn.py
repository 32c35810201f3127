"""The hosted turn (issue 27): accepted before it is handed out, recorded with its commits,
exactly once per idempotency key, found and followed from any host object, settled when its
owner died, cancelled across hosts within about a second, stopped on shutdown."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from hosting_flows import Gate, build

from checkflow.agents import ScriptedAgent
from checkflow.errors import (
    InvalidResponseError,
    RecordTooLargeError,
    RequestNotPendingError,
    TurnInProgressError,
)
from checkflow.hosting import (
    AgentHost,
    ReplayedTurn,
    Turn,
    TurnOrigin,
    WorkflowHost,
    create_app,
)
from checkflow.hosting._keys import ConversationKey
from checkflow.hosting._turns import DEAD_OWNER
from checkflow.sessions import FileSessionStore, InMemorySessionStore
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage
from checkflow.workflows import (
    Executor,
    OutputEvent,
    RunStatus,
    SnapshotCommittedEvent,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowStatusEvent,
    handler,
)

DEADLINE = 30.0


def shared_hosts(workflow: Any, tmp_path: Path, **options: Any) -> tuple[WorkflowHost,
                                                                           WorkflowHost]:
    """Two host objects (two lease owners, as two processes) on one pair of file stores."""
    def one() -> WorkflowHost:
        return WorkflowHost(workflow, session_store=FileSessionStore(tmp_path / "sessions"),
                            checkpoint_storage=FileCheckpointStorage(tmp_path / "checkpoints"),
                            **options)
    return one(), one()


class Counted(Executor):
    """Yields ``first`` in superstep 1, then (``hold``) waits on the gate in superstep 2."""

    def __init__(self, gate: Gate) -> None:
        super().__init__("counted")
        self._gate = gate

    @handler
    async def text(self, text: str, ctx: WorkflowContext) -> None:
        self._gate.runs += 1
        await ctx.yield_output(f"first {text}")
        await ctx.send_message(text, target_id="later")


class Later(Executor):
    def __init__(self, gate: Gate) -> None:
        super().__init__("later")
        self._gate = gate

    @handler
    async def text(self, text: str, ctx: WorkflowContext) -> None:
        if text == "hold":
            self._gate.entered.set()
            await asyncio.wait_for(self._gate.release.wait(), DEADLINE)
        await ctx.yield_output(f"then {text}")


def two_steps(gate: Gate) -> Any:
    counted, later = Counted(gate), Later(gate)
    return WorkflowBuilder(start_executor=counted, name="two-steps").add_edge(
        counted, later).build()


# -- acceptance --------------------------------------------------------------------------------


async def test_a_streamed_turn_is_handed_out_once_its_input_is_committed(gate: Gate) -> None:
    host = WorkflowHost(build(gate))
    turn = await host.run("c", message="hold", stream=True)
    assert isinstance(turn, Turn)
    checkpoint, _ = await host.checkpoint_storage.load(
        ConversationKey(None, "c").checkpoint_id(0)), None
    assert [s.metadata["boundary"] for s in checkpoint.snapshots] == ["input_accepted"]
    assert checkpoint.snapshots[0].metadata["turn"]["id"] == turn.turn_id
    events = aiter(turn)
    first = await anext(events)
    while type(first) is not SnapshotCommittedEvent:  # the read-ahead events come first
        first = await anext(events)
    gate.release.set()
    assert [e.data async for e in events if isinstance(e, OutputEvent)] == ["HOLD"]
    assert (await turn.get_result()).outputs == ["HOLD"]


async def test_a_refused_answer_is_raised_by_run_and_leaves_the_conversation_free(
        host: WorkflowHost) -> None:
    await host.run("c", message="ask")
    with pytest.raises(InvalidResponseError):
        await host.run("c", responses={"no-such-request": True}, stream=True)
    result = await host.run("c", message="again")  # not busy: the refusal released it
    assert result.outputs == ["AGAIN"]


# -- the record rule ---------------------------------------------------------------------------


async def test_every_snapshot_of_a_turn_records_it_and_the_first_its_origin(
        host: WorkflowHost) -> None:
    origin = TurnOrigin("agui", {"run_id": "r-1", "message_ids": ["m-1"]})
    result = await host.run("c", message="hi", origin=origin, idempotency_key="r-1")
    checkpoint, _ = await host.get_checkpoint("c")
    marks = [s.metadata["turn"] for s in checkpoint.snapshots]
    assert all(m["id"] == result.turn.turn_id and m["key"] == "r-1" for m in marks)
    assert marks[0]["data"] == {"run_id": "r-1", "message_ids": ["m-1"]}
    assert all("data" not in m for m in marks[1:])
    [record] = await host.turns("c")
    assert (record.protocol, record.data, record.outputs) == ("agui", origin.data, ["HI"])
    assert record.checkpoint_id == checkpoint.checkpoint_id
    assert record.started_at and record.ended_at and record.on_lineage


async def test_turns_follow_the_lineage_a_branch_and_a_cancel_leave_the_other_line(
        gate: Gate) -> None:
    host = WorkflowHost(build(gate))
    one = await host.run("c", message="one")
    two = await host.run("c", message="two")
    assert [t.outputs for t in await host.turns("c")] == [["ONE"], ["TWO"]]
    assert one.turn is not None and two.turn is not None
    branched = await host.run("c", message="three", from_snapshot=one.turn.last_snapshot_id)
    assert [t.turn_id for t in await host.turns("c")] == [one.turn.turn_id,
                                                          branched.turn.turn_id]
    off = await host.find_turn("c", turn_id=two.turn.turn_id)
    assert off is not None and off.state == "committed" and not off.on_lineage
    held = await host.run("c", message="hold", stream=True)
    drive = asyncio.ensure_future(held.get_result())
    await gate.entered.wait()
    assert await host.cancel("c")
    assert (await drive).status == RunStatus.CANCELLED
    assert [t.turn_id for t in await host.turns("c")] == [one.turn.turn_id,
                                                          branched.turn.turn_id]
    cancelled = await host.find_turn("c", turn_id=held.turn_id)
    assert cancelled is not None and cancelled.state == "cancelled"


async def test_a_failed_turn_is_recorded_with_its_error_and_runs_again_on_retry(
        host: WorkflowHost) -> None:
    await host.run("c", message="fine")
    failed = await host.run("c", message="boom", idempotency_key="k")
    assert failed.status == RunStatus.FAILED
    record = await host.find_turn("c", idempotency_key="k")
    assert record is not None and record.state == "failed"
    assert "exploded" in (record.error or "")
    again = await host.run("c", message="boom", idempotency_key="k")
    assert not again.replayed and again.status == RunStatus.FAILED


async def test_origin_data_over_the_record_bound_is_refused_before_anything_runs() -> None:
    host = WorkflowHost(build(), max_record_bytes=1_000)
    with pytest.raises(RecordTooLargeError):
        await host.run("c", message="hi", origin=TurnOrigin("agui", {"x": "y" * 2_000}))
    assert await host.list_conversations() == []


# -- exactly once --------------------------------------------------------------------------------


async def test_a_retry_of_a_committed_turn_replays_it_and_runs_nothing(tmp_path: Path) -> None:
    gate = Gate()
    first, second = shared_hosts(two_steps(gate), tmp_path)
    result = await first.run("c", message="go", idempotency_key="key-1")
    again = await second.run("c", message="go", idempotency_key="key-1")  # another "process"
    assert gate.runs == 1 and again.replayed and not result.replayed
    assert again.outputs == result.outputs == ["first go", "then go"]
    assert again.turn is not None and result.turn is not None
    assert again.turn.turn_id == result.turn.turn_id
    replay = await second.run("c", message="go", idempotency_key="key-1", stream=True)
    assert isinstance(replay, ReplayedTurn) and replay.replayed
    events = [event async for event in replay]
    assert [e.data for e in events if isinstance(e, OutputEvent)] == ["first go", "then go"]
    assert isinstance(events[-1], WorkflowStatusEvent)
    assert gate.runs == 1


async def test_a_retry_with_a_stale_token_still_replays(host: WorkflowHost) -> None:
    first = await host.run("c", message="one")
    await host.run("c", message="two", idempotency_key="k", resume_token=first.resume_token)
    again = await host.run("c", message="two", idempotency_key="k",
                           resume_token=first.resume_token)
    assert again.replayed and again.outputs == ["TWO"]


async def test_a_retry_of_a_running_turn_names_it_here_and_on_another_host(
        tmp_path: Path) -> None:
    gate = Gate()
    owner, other = shared_hosts(build(gate), tmp_path)
    turn = await owner.run("c", message="hold", stream=True, idempotency_key="k")
    with pytest.raises(TurnInProgressError) as here:
        await owner.run("c", message="hold", idempotency_key="k")
    with pytest.raises(TurnInProgressError) as elsewhere:
        await other.run("c", message="hold", idempotency_key="k")
    assert here.value.turn_id == elsewhere.value.turn_id == turn.turn_id
    gate.release.set()
    await turn.get_result()
    assert gate.runs == 1


async def test_an_answer_to_an_answered_request_is_refused_and_a_branch_is_explicit(
        host: WorkflowHost) -> None:
    paused = await host.run("c", message="ask")
    [request_id] = paused.pending_requests
    await host.run("c", responses={request_id: True})
    with pytest.raises(RequestNotPendingError) as caught:
        await host.run("c", responses={request_id: False})
    assert caught.value.request_ids == [request_id]
    assert paused.resume_token is not None
    branched = await host.run("c", responses={request_id: False},
                              from_snapshot=paused.resume_token.snapshot_id)
    assert branched.outputs == ["rejected"]


# -- no zombies, follow and cancel from anywhere ----------------------------------------------


async def test_a_dead_owners_turn_is_failed_at_once_and_settled_by_the_next_turn(
        host: WorkflowHost) -> None:
    await host.run("c", message="one")
    key = ConversationKey(None, "c")
    session = await host.session_store.get(key.session_id)
    assert session is not None
    session.state["lease"] = {"owner": "gone", "expires_at": time.time() - 1,
                              "turn": {"id": "t-dead", "protocol": "responses",
                                       "data": {"response_id": "resp-1"}}}
    await host.session_store.set(session)
    record = await host.find_turn("c", turn_id="t-dead")
    assert record is not None and (record.state, record.error) == ("failed", DEAD_OWNER)
    assert record.data == {"response_id": "resp-1"}
    assert [e async for e in host.follow("c", turn_id="t-dead")][-1].status == RunStatus.FAILED
    await host.run("c", message="two")  # takes the conversation over: settles it for good
    settled = await host.find_turn("c", turn_id="t-dead")
    assert settled is not None and settled.state == "failed"
    assert settled.data == {"response_id": "resp-1"}


async def test_another_host_follows_a_turn_snapshot_by_snapshot(tmp_path: Path) -> None:
    gate = Gate()
    owner, follower = shared_hosts(two_steps(gate), tmp_path)
    turn = await owner.run("c", message="hold", stream=True)
    drive = asyncio.ensure_future(turn.get_result())
    await gate.entered.wait()
    events = follower.follow("c", turn_id=turn.turn_id, poll_seconds=0.01)
    seen: list[Any] = []
    async for event in events:
        seen.append(event)
        if isinstance(event, OutputEvent):
            break  # superstep 1's output, told while superstep 2 still holds
    assert seen[-1].data == "first hold" and not drive.done()
    gate.release.set()
    rest = [event async for event in events]
    assert [e.data for e in rest if isinstance(e, OutputEvent)] == ["then hold"]
    assert isinstance(rest[-1], WorkflowStatusEvent) and rest[-1].status == RunStatus.IDLE
    await drive


async def test_a_cancel_from_another_host_is_honoured_within_the_poll(tmp_path: Path) -> None:
    gate = Gate()
    owner, other = shared_hosts(build(gate), tmp_path, cancel_poll_seconds=0.05)
    turn = await owner.run("c", message="hold", stream=True)
    drive = asyncio.ensure_future(turn.get_result())
    await gate.entered.wait()
    assert await other.cancel("c")
    result = await asyncio.wait_for(drive, DEADLINE)  # the lease renews only after 100 s
    assert result.status == RunStatus.CANCELLED


async def test_stop_turns_ends_every_running_turn_keeping_its_head(gate: Gate) -> None:
    host = WorkflowHost(build(gate))
    first = await host.run("c", message="one")
    turn = await host.run("c", message="hold", stream=True)
    drive = asyncio.ensure_future(turn.get_result())
    await gate.entered.wait()
    await host.stop_turns()
    assert (await drive).status == RunStatus.CANCELLED
    assert (await host.get_conversation("c")).resume_token == first.resume_token


# -- the agent host and the native API ---------------------------------------------------------


async def test_an_agent_turn_is_recorded_and_replayed_by_its_key() -> None:
    agent = ScriptedAgent("bot", ["one", "two"])
    host = AgentHost(agent, session_store=InMemorySessionStore())
    result = await host.run("c", message="hi", idempotency_key="k",
                            origin=TurnOrigin("agui", {"run_id": "k"}))
    again = await host.run("c", message="hi", idempotency_key="k")
    assert again.replayed and again.outputs[0].text == result.outputs[0].text == "one"
    [record] = await host.turns("c")
    assert (record.idempotency_key, record.data) == ("k", {"run_id": "k"})
    assert (await host.run("c", message="more")).outputs[0].text == "two"


async def test_the_native_api_takes_an_idempotency_key_header() -> None:
    app = create_app(WorkflowHost(build(), checkpoint_storage=InMemoryCheckpointStorage()))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test") as client:
        url = "/v1/conversations/c/runs"
        first = await client.post(url, json={"message": "hi"}, headers={"Idempotency-Key": "a"})
        again = await client.post(url, json={"message": "hi"}, headers={"Idempotency-Key": "a"})
        assert first.status_code == again.status_code == 200
        assert "replayed" not in first.json() and again.json()["replayed"] is True
        assert again.json()["outputs"] == first.json()["outputs"]
        for bad in ("", "x" * 256):
            refused = await client.post(url, json={"message": "hi"},
                                        headers={"Idempotency-Key": bad})
            assert refused.status_code == 400
            assert refused.json()["error"]["code"] == "invalid_idempotency_key"
        paused = (await client.post(url, json={"message": "ask"})).json()
        [request] = paused["pending_requests"]
        answer = {"responses": {request["request_id"]: True}}
        assert (await client.post(url, json=answer)).status_code == 200
        late = await client.post(url, json=answer)
        assert late.status_code == 409 and late.json()["error"]["code"] == "already_answered"


async def test_cancelling_a_paused_turn_takes_the_head_back_before_it(
        host: WorkflowHost) -> None:
    first = await host.run("c", message="one")
    paused = await host.run("c", message="ask", origin=TurnOrigin("a2a", {"task": "t"}))
    assert paused.turn is not None and paused.pending_requests
    assert await host.cancel("c", turn_id=paused.turn.turn_id)
    assert (await host.get_conversation("c")).resume_token == first.resume_token
    assert [t.outputs for t in await host.turns("c")] == [["ONE"]]
    record = await host.find_turn("c", turn_id=paused.turn.turn_id)
    assert record is not None and record.state == "cancelled"
    assert record.data == {"task": "t"}
    assert not await host.cancel("c", turn_id=paused.turn.turn_id)  # off the lineage now
    assert (await host.run("c", message="two")).outputs == ["TWO"]  # no request waits


async def test_cancelling_a_conversations_only_turn_starts_it_afresh(host: WorkflowHost) -> None:
    paused = await host.run("c", message="ask")
    assert paused.turn is not None
    assert await host.cancel("c", turn_id=paused.turn.turn_id)
    fresh = await host.run("c", message="again")
    assert fresh.outputs == ["AGAIN"] and len(await host.turns("c")) == 1


async def test_the_running_turn_is_found_without_its_id_and_times_agree(gate: Gate) -> None:
    host = WorkflowHost(build(gate))
    assert await host.find_turn("c") is None
    turn = await host.run("c", message="hold", stream=True,
                          origin=TurnOrigin("responses", {"id": "r"}))
    drive = asyncio.ensure_future(turn.get_result())
    await gate.entered.wait()
    running = await host.find_turn("c")
    assert running is not None and (running.turn_id, running.state) == (turn.turn_id, "running")
    assert running.data == {"id": "r"}
    gate.release.set()
    result = await drive
    found = await host.find_turn("c", turn_id=turn.turn_id)
    assert result.turn is not None and found is not None
    assert (result.turn.started_at, result.turn.ended_at, result.turn.checkpoint_id) == (
        found.started_at, found.ended_at, found.checkpoint_id)
    failed = await host.run("c", message="boom")
    assert failed.turn is not None
    failed_found = await host.find_turn("c", turn_id=failed.turn.turn_id)
    assert failed_found is not None and failed_found.ended_at == failed.turn.ended_at


async def test_a_turn_right_after_reading_the_turns_loads_nothing_more(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "checkpoints")
    loads: list[str] = []
    real = storage.load

    async def counted(checkpoint_id: str) -> Any:
        loads.append(checkpoint_id)
        return await real(checkpoint_id)

    storage.load = counted  # type: ignore[method-assign]
    host = WorkflowHost(build(), session_store=FileSessionStore(tmp_path / "s"),
                        checkpoint_storage=storage)
    await host.run("c", message="one")
    loads.clear()
    await host.turns("c")
    await host.run("c", message="two")
    assert len(loads) == 1
    loads.clear()
    await host.turns("c")
    await host.run("c", message="three")  # the session did not change in between: reused
    await host.run("c", message="four")  # nothing remembered: loads
    assert len(loads) == 2
