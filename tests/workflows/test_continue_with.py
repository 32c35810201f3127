"""``ctx.continue_with``: an executor's next step, committed between; and
``Executor.check_response``: an executor refuses an answer before anything is committed."""

from __future__ import annotations

import pytest

from checkflow.errors import InvalidResponseError, WorkflowRunError
from checkflow.workflows import (
    Executor,
    RunStatus,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


class Counter(Executor):
    """Counts to the number it is given, one superstep per step."""

    @handler
    async def count(self, goal: int, ctx: WorkflowContext[int, list[int]]) -> None:
        seen: list[int] = ctx.executor_state.setdefault("seen", [])
        seen.append(len(seen) + 1)
        if len(seen) < goal:
            await ctx.continue_with(goal)
        else:
            await ctx.yield_output(list(seen))


class Wrong(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.continue_with(3.5)  # no handler takes a float


class Asker(Executor):
    """Asks for a quantity; refuses answers above its limit (the type alone allows them)."""

    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.request_info({"limit": 10}, response_type=int, request_id="q")

    def check_response(self, request: object, response: object) -> None:
        if isinstance(request, dict) and isinstance(response, int) \
                and response > request["limit"]:
            raise ValueError(f"{response} is above the limit of {request['limit']}")

    @response_handler
    async def take(self, request: dict, answer: int, ctx: WorkflowContext) -> None:
        await ctx.yield_output(answer)


async def test_each_step_is_its_own_superstep_and_snapshot_and_resumes_anywhere() -> None:
    workflow = WorkflowBuilder(Counter("counter")).build()
    checkpoint = workflow.create_checkpoint()
    result = await workflow.run(3, checkpoint=checkpoint)
    assert result.get_outputs() == [[1, 2, 3]]
    steps = [s for s in checkpoint.snapshots
             if s.metadata["boundary"] == "superstep_completed"]
    assert [s.state["executor_states"]["counter"]["seen"] for s in steps] == [
        [1], [1, 2], [1, 2, 3]]  # one commit per step
    # after step one, the continuation waits in the snapshot: a resume from there goes on
    first = steps[0]
    assert first.state["messages"]["pending"]["messages"] == [
        {"kind": "message", "source": "counter", "target": "counter", "data": 3}]
    checkpoint.restart_from(first.snapshot_id)
    resumed = await workflow.run(checkpoint=checkpoint)
    assert resumed.get_outputs() == [[1, 2, 3]]


async def test_continuing_with_a_message_the_executor_cannot_take_fails_the_run() -> None:
    workflow = WorkflowBuilder(Wrong("wrong")).build()
    with pytest.raises(WorkflowRunError) as caught:
        await workflow.run("go")
    assert "no handler for a float message to continue with" in str(caught.value.__cause__)


async def test_an_answer_the_executor_refuses_commits_nothing_and_the_request_stays() -> None:
    workflow = WorkflowBuilder(Asker("asker")).build()
    checkpoint = workflow.create_checkpoint()
    await workflow.run("how many?", checkpoint=checkpoint)
    head = checkpoint.head_snapshot_id
    with pytest.raises(InvalidResponseError, match="above the limit of 10") as caught:
        await workflow.run(responses={"q": 11}, checkpoint=checkpoint)
    assert caught.value.request_id == "q" and checkpoint.head_snapshot_id == head
    done = await workflow.run(responses={"q": 7}, checkpoint=checkpoint)
    assert done.status is RunStatus.IDLE and done.get_outputs() == [7]
