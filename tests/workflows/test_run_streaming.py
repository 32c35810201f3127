"""run(stream=True): events as they happen, the final result, failure and cancellation."""

from __future__ import annotations

import asyncio
import gc

import pytest
from engine_samples import build_factor

from checkflow.errors import CheckpointInUseError, WorkflowRunError
from checkflow.workflows import (
    Executor,
    ExecutorCompletedEvent,
    ExecutorFailedEvent,
    ExecutorInvokedEvent,
    OutputEvent,
    RequestInfoEvent,
    RunStatus,
    SnapshotCommittedEvent,
    SuperstepCompletedEvent,
    SuperstepStartedEvent,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowEvent,
    WorkflowFailedEvent,
    WorkflowRunStream,
    WorkflowStartedEvent,
    WorkflowStatusEvent,
    handler,
)


async def test_a_stream_yields_the_events_in_order_then_the_result():
    workflow = build_factor()
    stream = workflow.run(2, stream=True, checkpoint=workflow.create_checkpoint())
    kinds = [type(event) async for event in stream]
    result = await stream.get_result()
    assert kinds == [
        WorkflowStartedEvent,
        SnapshotCommittedEvent,
        SuperstepStartedEvent,
        ExecutorInvokedEvent,
        ExecutorCompletedEvent,
        SuperstepCompletedEvent,
        SnapshotCommittedEvent,
        SuperstepStartedEvent,
        ExecutorInvokedEvent,
        ExecutorCompletedEvent,
        SuperstepCompletedEvent,
        SnapshotCommittedEvent,
        SuperstepStartedEvent,
        ExecutorInvokedEvent,
        RequestInfoEvent,
        ExecutorCompletedEvent,
        SuperstepCompletedEvent,
        SnapshotCommittedEvent,
        WorkflowStatusEvent,
    ]
    assert result.status is RunStatus.AWAITING_RESPONSES
    assert [type(e) for e in result.events] == kinds


async def test_get_result_alone_drains_the_stream():
    workflow = build_factor()
    stream = workflow.run(2, stream=True, checkpoint=workflow.create_checkpoint())
    result = await stream.get_result()
    assert result.status is RunStatus.AWAITING_RESPONSES
    assert len(result.checkpoint.snapshots) == 4


async def test_a_one_shot_stream_commits_once_as_the_run_pauses():
    result = await build_factor().run(2, stream=True).get_result()
    assert result.status is RunStatus.AWAITING_RESPONSES
    (snapshot,) = result.checkpoint.snapshots
    assert snapshot.metadata == {"boundary": "superstep_completed", "superstep": 3,
                                 "status": "awaiting_responses"}
    committed = [e for e in result.events if isinstance(e, SnapshotCommittedEvent)]
    assert [e.snapshot_id for e in committed] == [snapshot.snapshot_id]
    assert isinstance(result.events[-1], WorkflowStatusEvent)


class Progress(WorkflowEvent):
    def __init__(self, step: int) -> None:
        self.step = step


class Loud(Executor):
    @handler
    async def go(self, n: int, ctx: WorkflowContext[int, str]) -> None:
        await ctx.add_event(Progress(n))
        await ctx.yield_output(f"done {n}")


async def test_custom_events_and_outputs_are_streamed():
    stream = WorkflowBuilder(start_executor=Loud(id="loud")).build().run(3, stream=True)
    events = [e async for e in stream]
    progress = [e.step for e in events if isinstance(e, Progress)]
    outputs = [e.data for e in events if isinstance(e, OutputEvent)]
    assert progress == [3] and outputs == ["done 3"]


class Broken(Executor):
    @handler
    async def go(self, n: int, ctx: WorkflowContext) -> None:
        raise ZeroDivisionError("division by zero")


async def test_a_failing_stream_emits_the_failure_first_then_raises():
    stream = WorkflowBuilder(start_executor=Broken(id="broken")).build().run(1, stream=True)
    seen: list[WorkflowEvent] = []
    with pytest.raises(WorkflowRunError) as caught:
        async for event in stream:
            seen.append(event)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)
    failed = [e for e in seen if isinstance(e, WorkflowFailedEvent)]
    assert len(failed) == 1 and failed[0].executor_id == "broken"
    assert any(isinstance(e, ExecutorFailedEvent) for e in seen)
    assert seen.index(failed[0]) < len(seen)
    assert seen[-1] == WorkflowStatusEvent(RunStatus.FAILED)
    with pytest.raises(WorkflowRunError):
        await stream.get_result()


class Ticker(Executor):
    @handler
    async def tick(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n + 1)


def ticking() -> Workflow:
    ticker = Ticker(id="ticker")
    return WorkflowBuilder(start_executor=ticker).add_edge(ticker, ticker).build()


async def read_until_snapshot(stream: WorkflowRunStream, superstep: int | None = None) -> int:
    """Consume events up to the next snapshot (of ``superstep``, if given); its superstep."""
    async for event in stream:
        if isinstance(event, SnapshotCommittedEvent) and superstep in (None, event.superstep):
            return event.superstep
    raise AssertionError("the stream ended without that snapshot")


async def test_closing_a_stream_between_supersteps_cancels_and_commits_nothing_more(storage):
    workflow = ticking()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    stream = workflow.run(0, checkpoint=checkpoint, stream=True)
    await read_until_snapshot(stream, 2)
    await stream.aclose()
    result = await stream.get_result()
    assert result.status is RunStatus.CANCELLED
    assert [s.metadata["superstep"] for s in checkpoint.snapshots] == [0, 1, 2]
    loaded = await storage.load(checkpoint.checkpoint_id)
    assert loaded.head_snapshot_id == checkpoint.snapshots[-1].snapshot_id
    async with workflow.run(checkpoint=loaded, stream=True) as again:  # the guard was released
        assert await read_until_snapshot(again) == 3


async def test_a_stream_dropped_without_aclose_cancels_its_run_and_frees_the_checkpoint(storage):
    workflow = ticking()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    stream = workflow.run(0, checkpoint=checkpoint, stream=True)
    await read_until_snapshot(stream, 1)
    (run_task,) = asyncio.all_tasks() - {asyncio.current_task()}
    del stream
    gc.collect()  # CPython frees it at once; other interpreters at the next collection
    await asyncio.wait([run_task], timeout=10)  # a generous deadline, not a timing

    assert run_task.cancelled()
    assert [s.metadata["superstep"] for s in checkpoint.snapshots] == [0, 1]
    async with workflow.run(checkpoint=checkpoint, stream=True) as again:  # the guard is free
        assert await read_until_snapshot(again) == 2


class Slow(Executor):
    def __init__(self, id: str, entered: asyncio.Event) -> None:
        super().__init__(id)
        self._entered = entered

    @handler
    async def go(self, n: int, ctx: WorkflowContext) -> None:
        self._entered.set()
        await asyncio.wait_for(asyncio.Event().wait(), timeout=10)  # never finishes by itself


async def test_closing_a_stream_mid_superstep_abandons_that_superstep():
    entered = asyncio.Event()
    workflow = WorkflowBuilder(start_executor=Slow(id="slow", entered=entered)).build()
    stream = workflow.run(1, stream=True, checkpoint=workflow.create_checkpoint())
    consumer = asyncio.ensure_future(stream.get_result())
    await asyncio.wait_for(entered.wait(), timeout=10)
    await stream.aclose()
    consumer.cancel()
    result = await stream.get_result()
    assert result.status is RunStatus.CANCELLED
    assert [s.metadata["boundary"] for s in result.checkpoint.snapshots] == ["input_accepted"]


class HeldCommits:
    """Wraps a storage; from its ``held_from``-th commit on, holds each one at a gate."""

    def __init__(self, inner, held_from: int) -> None:
        self.inner, self.format, self._held_from, self._count = inner, inner.format, held_from, 0
        self.entered, self.gate = asyncio.Event(), asyncio.Event()

    async def commit_snapshot(self, checkpoint, snapshot, *, expected_head_snapshot_id) -> None:
        self._count += 1
        if self._count >= self._held_from:
            self.entered.set()
            await asyncio.wait_for(self.gate.wait(), timeout=10)
        await self.inner.commit_snapshot(
            checkpoint, snapshot, expected_head_snapshot_id=expected_head_snapshot_id
        )

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


async def test_a_cancelled_run_waits_for_its_in_flight_commit_before_releasing(storage):
    held = HeldCommits(storage, held_from=2)  # the entry commit lands; superstep 1's is held
    workflow = ticking()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=held)
    stream = workflow.run(0, checkpoint=checkpoint, stream=True)
    consumer = asyncio.ensure_future(stream.get_result())
    await asyncio.wait_for(held.entered.wait(), timeout=10)
    closing = asyncio.ensure_future(stream.aclose())
    done, _ = await asyncio.wait([closing], timeout=0.5)  # a bounded negative wait
    assert not done, "aclose() returned while the superstep's commit was still in flight"
    with pytest.raises(CheckpointInUseError):
        await workflow.run(checkpoint=checkpoint)
    held.gate.set()
    await asyncio.wait_for(closing, timeout=10)
    assert (await asyncio.wait_for(consumer, timeout=10)).status is RunStatus.CANCELLED
    assert [s.metadata["superstep"] for s in checkpoint.snapshots] == [0, 1]
    assert (await storage.load(checkpoint.checkpoint_id)).head_snapshot_id == (
        checkpoint.head_snapshot_id
    )


class Marks(Executor):
    """Sets ``reached`` when its handler runs: after four events of the run were handed over."""

    def __init__(self, id: str, reached: asyncio.Event) -> None:
        super().__init__(id)
        self._reached = reached

    @handler
    async def go(self, n: int, ctx: WorkflowContext) -> None:
        self._reached.set()
        await ctx.yield_output(n)


async def test_an_unpaced_stream_runs_on_without_its_events_being_taken():
    reached = asyncio.Event()
    workflow = WorkflowBuilder(start_executor=Marks(id="marks", reached=reached)).build()
    stream = workflow.run(7, stream=True, checkpoint=workflow.create_checkpoint())
    stream.unpaced()
    first = await anext(stream)  # starts the run; the consumer then reads nothing for a while
    assert isinstance(first, WorkflowStartedEvent)
    await asyncio.wait_for(reached.wait(), timeout=10)  # paced, the run would wait at event 2
    rest = [event async for event in stream]
    result = await stream.get_result()
    assert [first, *rest] == result.events  # every event, in order, none lost
    assert result.get_outputs() == [7]


async def test_an_unpaced_stream_still_stops_at_aclose():
    entered = asyncio.Event()
    workflow = WorkflowBuilder(start_executor=Slow(id="slow", entered=entered)).build()
    stream = workflow.run(1, stream=True, checkpoint=workflow.create_checkpoint())
    stream.unpaced()
    consumer = asyncio.ensure_future(stream.get_result())
    await asyncio.wait_for(entered.wait(), timeout=10)
    await stream.aclose()
    result = await asyncio.wait_for(consumer, timeout=10)
    assert result.status is RunStatus.CANCELLED
    assert [s.metadata["boundary"] for s in result.checkpoint.snapshots] == ["input_accepted"]


async def test_drain_hands_every_event_over_in_order_then_the_result_is_ready():
    workflow = build_factor()
    stream = workflow.run(2, stream=True, checkpoint=workflow.create_checkpoint())
    seen: list[WorkflowEvent] = []
    await stream.drain(seen.append)
    result = await stream.get_result()
    assert seen == result.events and len(seen) == 19
    assert result.status is RunStatus.AWAITING_RESPONSES


async def test_drain_raises_the_runs_failure_after_handing_over_its_events():
    stream = WorkflowBuilder(start_executor=Broken(id="broken")).build().run(1, stream=True)
    seen: list[WorkflowEvent] = []
    with pytest.raises(WorkflowRunError) as caught:
        await stream.drain(seen.append)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)
    assert seen[-1] == WorkflowStatusEvent(RunStatus.FAILED)


async def test_drain_returns_when_the_stream_is_closed_meanwhile():
    entered = asyncio.Event()
    workflow = WorkflowBuilder(start_executor=Slow(id="slow", entered=entered)).build()
    stream = workflow.run(1, stream=True, checkpoint=workflow.create_checkpoint())
    seen: list[WorkflowEvent] = []
    draining = asyncio.ensure_future(stream.drain(seen.append))
    await asyncio.wait_for(entered.wait(), timeout=10)
    await stream.aclose()
    await asyncio.wait_for(draining, timeout=10)
    assert isinstance(seen[0], WorkflowStartedEvent)
    assert (await stream.get_result()).status is RunStatus.CANCELLED
