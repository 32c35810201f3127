"""What one run() call does, situation by situation: input, responses, resume, and refusals."""

from __future__ import annotations

import pytest
from engine_samples import Approval, build_factor, build_review

from checkflow.errors import InvalidResponseError
from checkflow.workflows import (
    Executor,
    RequestInfoEvent,
    RunStatus,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)


async def test_a_message_and_responses_together_are_refused():
    workflow = build_factor()
    checkpoint = workflow.create_checkpoint()
    with pytest.raises(ValueError, match="a message or responses, not both"):
        await workflow.run(10, checkpoint=checkpoint, responses={"x": True})
    assert checkpoint.snapshots == []


async def test_an_empty_checkpoint_without_input_is_refused():
    workflow = build_factor()
    checkpoint = workflow.create_checkpoint()
    with pytest.raises(ValueError, match="is empty: give run\\(\\) a message"):
        await workflow.run(checkpoint=checkpoint)
    assert checkpoint.snapshots == []


class Echo(Executor):
    @handler
    async def echo(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(text)


async def test_an_idle_head_without_input_returns_idle_and_commits_nothing(storage):
    workflow = WorkflowBuilder(start_executor=Echo(id="echo")).build()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    await workflow.run("hi", checkpoint=checkpoint)
    count = len(checkpoint.snapshots)
    result = await workflow.run(checkpoint=checkpoint)
    assert result.status is RunStatus.IDLE
    assert result.get_outputs() == []
    assert len(checkpoint.snapshots) == count
    assert len((await storage.load(checkpoint.checkpoint_id)).snapshots) == count


async def test_an_awaiting_head_without_input_re_reports_the_same_requests(storage):
    workflow = build_review()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    first = await workflow.run("cats", checkpoint=checkpoint)
    count = len(checkpoint.snapshots)
    again = await workflow.run(checkpoint=await storage.load(checkpoint.checkpoint_id))
    assert again.status is RunStatus.AWAITING_RESPONSES
    assert again.pending_requests == first.pending_requests
    assert [e.request.request_id for e in again.events if isinstance(e, RequestInfoEvent)] == [
        "approve",
        "urgent",
    ]
    assert again.pending_requests["approve"].response_type is Approval
    assert len((await storage.load(checkpoint.checkpoint_id)).snapshots) == count


class Flaky(Executor):
    """Halves until 1; fails while the test holds the switch on (a crash mid-run)."""

    def __init__(self, id: str, failing: list[bool]) -> None:
        super().__init__(id)
        self._failing = failing

    @handler
    async def step(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        if n == 2 and self._failing[0]:
            raise RuntimeError("worker crashed")
        if n <= 1:
            await ctx.yield_output(n)
        else:
            await ctx.send_message(n // 2)


async def test_a_mid_run_head_resumes_its_pending_messages(storage):
    failing = [True]
    worker = Flaky(id="worker", failing=failing)
    workflow = WorkflowBuilder(start_executor=worker).add_edge(worker, worker).build()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    with pytest.raises(Exception, match="worker crashed"):
        await workflow.run(8, checkpoint=checkpoint)  # 8 -> 4 -> 2 (crash)
    loaded = await storage.load(checkpoint.checkpoint_id)
    assert loaded.head_snapshot.metadata["status"] == "running"
    assert loaded.head_snapshot.state["messages"]["pending"]["messages"][0]["data"] == 2
    failing[0] = False
    result = await workflow.run(checkpoint=loaded)
    assert result.status is RunStatus.IDLE
    assert result.get_outputs() == [1]
    boundaries = [s.metadata["boundary"] for s in loaded.ancestors(loaded.head_snapshot_id)]
    assert boundaries == ["superstep_completed"] * 4 + ["input_accepted"]


async def test_a_new_message_while_requests_are_pending_keeps_them_pending():
    workflow = build_factor()
    first = await workflow.run(4)
    second = await workflow.run(3, checkpoint=first.checkpoint)
    assert second.status is RunStatus.AWAITING_RESPONSES
    assert len(second.pending_requests) == 2
    assert set(first.pending_requests) < set(second.pending_requests)


async def test_partial_responses_leave_the_rest_pending():
    workflow = build_review()
    first = await workflow.run("cats")
    result = await workflow.run(responses={"urgent": False}, checkpoint=first.checkpoint)
    assert result.get_outputs() == ["urgent=False"]
    assert result.status is RunStatus.AWAITING_RESPONSES
    assert list(result.pending_requests) == ["approve"]


async def test_an_unknown_request_id_is_refused_by_name_and_commits_nothing():
    workflow = build_review()
    first = await workflow.run("cats")
    count = len(first.checkpoint.snapshots)
    with pytest.raises(InvalidResponseError, match="no pending request with id 'aprove'") as e:
        await workflow.run(responses={"urgent": True, "aprove": True}, checkpoint=first.checkpoint)
    assert e.value.request_id == "aprove"
    assert len(first.checkpoint.snapshots) == count
    result = await workflow.run(checkpoint=first.checkpoint)
    assert set(result.pending_requests) == {"approve", "urgent"}
