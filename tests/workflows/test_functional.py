"""Functional workflows: @workflow / @step on the same Checkpoint model as graphs."""

from __future__ import annotations

import asyncio
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import functional_samples
import pytest
from fresh_interpreter import fresh_env, main_command
from functional_samples import etl, log_lines

from checkflow.errors import InvalidResponseError, WorkflowRunError
from checkflow.state import register_state_type
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import (
    FunctionalContext,
    OutputEvent,
    RunStatus,
    Workflow,
    step,
    workflow,
)


@dataclass(frozen=True)
class Approval:
    approved: bool
    by: str


calls: list[str] = []


@step
async def double(n: int) -> int:
    calls.append(f"double({n})")
    return n * 2


@step(name="add-one")
async def add_one(n: int) -> int:
    calls.append(f"add_one({n})")
    return n + 1


@workflow
async def arithmetic(n: int) -> int:
    return await add_one(await double(await double(n)))


@workflow(response_types=[Approval])
async def reviewed(n: int, ctx: FunctionalContext) -> str:
    doubled = await double(n)
    await ctx.yield_output(f"draft {doubled}")
    approval = await ctx.request_info({"publish": doubled}, response_type=Approval)
    if not approval.approved:
        return "dropped"
    return f"published {await add_one(doubled)} by {approval.by}"


@pytest.fixture(autouse=True)
def clear_calls():
    calls.clear()


def kill_on_marker(root: Path, work_dir: Path) -> None:
    """Start the ETL in a fresh interpreter and SIGKILL it once step 2 has started."""
    helper = functional_samples.__file__
    process = subprocess.Popen(
        main_command(helper, "run", str(root), str(work_dir)), env=fresh_env(helper)
    )
    try:
        deadline = time.monotonic() + 60
        while not (work_dir / "transform.started").exists():
            assert process.poll() is None, "the run ended before step 2 started"
            assert time.monotonic() < deadline, "step 2 never started"
            time.sleep(0.02)
    finally:
        process.kill()
        process.wait()


def test_a_functional_workflow_is_an_ordinary_workflow():
    assert isinstance(arithmetic, Workflow)
    assert arithmetic.name == "arithmetic"
    assert arithmetic.graph_signature_hash != reviewed.graph_signature_hash


async def test_it_runs_like_any_workflow_and_yields_its_return_value():
    result = await arithmetic.run(3)

    assert result.status is RunStatus.IDLE
    assert result.get_outputs() == [13]
    assert calls == ["double(3)", "double(6)", "add_one(12)"]


async def test_there_is_a_snapshot_after_the_input_and_after_each_step():
    result = await arithmetic.run(3, checkpoint=arithmetic.create_checkpoint())

    snapshots = result.checkpoint.snapshots
    assert [s.metadata["boundary"] for s in snapshots] == [
        "input_accepted",
        "superstep_completed",
        "superstep_completed",
        "superstep_completed",
    ]
    recorded = [s.state["executor_states"].get("arithmetic", {}).get("steps") for s in snapshots]
    assert recorded == [
        None,
        {"double#0": 6},
        {"double#0": 6, "double#1": 12},
        {"double#0": 6, "double#1": 12, "add-one#0": 13},
    ]
    assert set(snapshots[-1].state) == {
        "workflow_state",
        "executor_states",
        "edge_states",
        "messages",
    }


async def test_resuming_from_a_snapshot_does_not_rerun_completed_steps():
    checkpoint = arithmetic.create_checkpoint()
    await arithmetic.run(3, checkpoint=checkpoint)
    after_first = checkpoint.snapshots[1]
    calls.clear()

    checkpoint.restart_from(after_first.snapshot_id)
    result = await arithmetic.run(checkpoint=checkpoint)

    assert result.get_outputs() == [13]
    assert calls == ["double(6)", "add_one(12)"]


async def test_a_process_killed_during_step_two_resumes_and_reruns_only_step_two_onward(tmp_path):
    root, work_dir = tmp_path / "checkpoints", tmp_path / "work"
    work_dir.mkdir()

    kill_on_marker(root, work_dir)
    checkpoint = await FileCheckpointStorage(root).load("etl-1")
    steps = checkpoint.head_snapshot.state["executor_states"]["etl"]["steps"]
    assert steps == {"fetch#0": "owls"}

    result = await etl.run(checkpoint=checkpoint)

    assert result.get_outputs() == ["stored OWLS"]
    assert log_lines(work_dir) == ["fetch", "transform", "transform", "store"]


async def test_request_info_pauses_and_responses_resume_with_recorded_results():
    paused = await reviewed.run(5)
    assert paused.status is RunStatus.AWAITING_RESPONSES
    ((request_id, request),) = paused.pending_requests.items()
    assert request.data == {"publish": 10}
    assert request.response_type is Approval
    assert paused.get_outputs() == ["draft 10"]

    done = await reviewed.run(
        responses={request_id: {"approved": True, "by": "kim"}}, checkpoint=paused.checkpoint
    )

    assert done.get_outputs() == ["published 11 by kim"]  # the draft is not yielded again
    assert calls == ["double(5)", "add_one(10)"]


async def test_a_paused_functional_run_resumes_from_storage_in_a_reloaded_checkpoint(storage):
    checkpoint = reviewed.create_checkpoint(checkpoint_id="review-1", checkpoint_storage=storage)
    paused = await reviewed.run(2, checkpoint=checkpoint)
    (request_id,) = paused.pending_requests

    reloaded = await storage.load("review-1")
    done = await reviewed.run(responses={request_id: Approval(False, "lee")}, checkpoint=reloaded)

    assert done.get_outputs() == ["dropped"]
    assert calls == ["double(2)"]


async def test_an_answer_of_the_wrong_type_is_refused_and_changes_nothing():
    paused = await reviewed.run(5)
    (request_id,) = paused.pending_requests
    head = paused.checkpoint.head_snapshot_id

    with pytest.raises(InvalidResponseError):
        await reviewed.run(responses={request_id: "yes"}, checkpoint=paused.checkpoint)

    assert paused.checkpoint.head_snapshot_id == head


class Unregistered:
    pass


async def test_an_undeclared_unregistered_response_type_fails_the_run_with_a_clear_message():
    @workflow
    async def undeclared(n: int, ctx: FunctionalContext) -> None:
        await ctx.request_info({"n": n}, response_type=Unregistered)

    with pytest.raises(WorkflowRunError) as caught:
        await undeclared.run(1)

    assert "response_types" in str(caught.value.__cause__)


async def test_a_failing_step_fails_the_run_and_a_rerun_retries_only_that_step():
    attempts: list[int] = []

    @step
    async def flaky(n: int) -> int:
        attempts.append(n)
        if len(attempts) == 1:
            raise ConnectionError("service unavailable")
        return n + 100

    @workflow
    async def uses_flaky(n: int) -> int:
        return await flaky(await double(n))

    checkpoint = uses_flaky.create_checkpoint()
    with pytest.raises(WorkflowRunError) as caught:
        await uses_flaky.run(1, checkpoint=checkpoint)
    assert isinstance(caught.value.__cause__, ConnectionError)

    result = await uses_flaky.run(checkpoint=checkpoint)

    assert result.get_outputs() == [102]
    assert calls == ["double(1)"]
    assert attempts == [2, 2]


async def test_steps_awaited_together_run_one_per_superstep_and_all_are_recorded():
    @workflow
    async def parallel(n: int) -> list[int]:
        first, second = await asyncio.gather(double(n), add_one(n))
        return [first, second]

    result = await parallel.run(4)

    assert result.get_outputs() == [[8, 5]]
    steps = result.checkpoint.head_snapshot.state["executor_states"]["parallel"]["steps"]
    assert steps == {"double#0": 8, "add-one#0": 5}
    assert sorted(calls) == ["add_one(4)", "double(4)"]


async def test_a_functional_run_streams_its_events():
    outputs = [e.data async for e in arithmetic.run(3, stream=True) if isinstance(e, OutputEvent)]

    assert outputs == [13]


async def test_a_step_called_outside_a_workflow_is_a_plain_function():
    assert await double(21) == 42
    assert calls == ["double(21)"]


def test_a_workflow_function_must_be_async_and_take_the_message():
    with pytest.raises(TypeError, match="async def"):

        @workflow
        def not_async(n: int) -> int:
            return n


async def test_a_new_message_restarts_the_function_and_a_stale_answer_is_ignored():
    checkpoint = reviewed.create_checkpoint()
    stale = await reviewed.run(1, checkpoint=checkpoint)
    (stale_id,) = stale.pending_requests
    fresh = await reviewed.run(3, checkpoint=checkpoint)
    fresh_id = next(r for r in fresh.pending_requests if r != stale_id)

    ignored = await reviewed.run(responses={stale_id: Approval(True, "old")}, checkpoint=checkpoint)
    done = await reviewed.run(responses={fresh_id: Approval(True, "new")}, checkpoint=checkpoint)

    assert ignored.get_outputs() == []
    assert done.get_outputs() == ["published 7 by new"]


@register_state_type(type_id="tests.workflows.functional.Grant")
@dataclass(frozen=True)
class Grant:
    amount: int


async def test_a_registered_state_type_needs_no_declaration_as_a_response_type():
    @workflow
    async def granted(n: int, ctx: FunctionalContext) -> int:
        grant = await ctx.request_info({"n": n}, response_type=Grant)
        return n + grant.amount

    paused = await granted.run(1)
    (request,) = paused.pending_requests.values()
    assert request.response_type is Grant

    result = await granted.run(
        responses={request.request_id: {"amount": 4}}, checkpoint=paused.checkpoint
    )
    assert result.get_outputs() == [5]


def test_the_signature_covers_a_functions_name_and_types_but_not_its_body():
    def define(body: int, input_type: type = int) -> Workflow:
        async def counted(n: int) -> int:
            return n + body

        counted.__annotations__["n"] = input_type
        return workflow(counted)

    assert define(1).graph_signature_hash == define(2).graph_signature_hash
    assert define(1).graph_signature_hash != define(1, str).graph_signature_hash
