"""WorkflowExecutor: a child workflow runs inside a parent superstep, its state in the parent's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Never

import pytest
from engine_samples import Forward, fingerprint

from checkflow.errors import (
    GraphSignatureMismatchError,
    InvalidResponseError,
    WorkflowRunError,
    WorkflowValidationError,
)
from checkflow.workflows import (
    Executor,
    RequestCancelled,
    RequestInfoEvent,
    RunStatus,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
    response_handler,
    step,
    workflow,
)


@dataclass(frozen=True)
class Verdict:
    approved: bool
    by: str


class Ask(Executor):
    """Asks whether to approve ``n``; yields ``"<n>:<approved>:<by>"``."""

    @handler
    async def ask(self, n: int, ctx: WorkflowContext) -> None:
        ctx.executor_state["n"] = n
        await ctx.request_info({"approve": n}, response_type=Verdict)

    @response_handler
    async def answered(self, request: dict, verdict: Verdict, ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"{ctx.executor_state['n']}:{verdict.approved}:{verdict.by}")


class Double(Executor):
    @handler
    async def double(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n * 2)


class Collect(Executor):
    @handler
    async def collect(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"parent got {text}")


class Boom(Executor):
    @handler
    async def boom(self, n: int, ctx: WorkflowContext) -> None:
        raise RuntimeError(f"child cannot take {n}")


def child(*, doubled: bool = False) -> Workflow:
    ask = Ask(id="ask")
    if not doubled:
        return WorkflowBuilder(ask, name="approval").build()
    double = Double(id="double")
    return WorkflowBuilder(double, name="approval").add_edge(double, ask).build()


def parent(inner: Workflow, *, sub_id: str = "sub") -> Workflow:
    start, sub, collect = (
        Forward(id="start"),
        WorkflowExecutor(inner, id=sub_id),
        Collect(id="collect"),
    )
    return WorkflowBuilder(start, name="parent").add_edge(start, sub).add_edge(sub, collect).build()


async def test_a_child_asking_for_input_pauses_the_parent_under_a_namespaced_id():
    result = await parent(child()).run(7)

    assert result.status is RunStatus.AWAITING_RESPONSES
    ((request_id, request),) = result.pending_requests.items()
    assert request_id.startswith("sub/")
    assert request.data == {"approve": 7}
    assert request.response_type is Verdict
    assert request.source_executor_id == "sub"


async def test_answering_through_the_parent_completes_the_child():
    workflow = parent(child())
    paused = await workflow.run(7)
    (request_id,) = paused.pending_requests

    done = await workflow.run(
        responses={request_id: {"approved": True, "by": "kim"}}, checkpoint=paused.checkpoint
    )

    assert done.status is RunStatus.IDLE
    assert done.get_outputs() == ["parent got 7:True:kim"]
    child_state = done.checkpoint.head_snapshot.state["executor_states"]["sub"]["workflow"]
    assert child_state["workflow_state"]["status"] == "idle"
    assert child_state["messages"]["pending"]["requests"] == {}


class AskTwice(Executor):
    """Asks two questions about ``n`` at once; yields ``"<part>:<approved>"`` per answer."""

    @handler
    async def ask(self, n: int, ctx: WorkflowContext) -> None:
        await ctx.request_info({"part": "a", "n": n}, response_type=Verdict)
        await ctx.request_info({"part": "b", "n": n}, response_type=Verdict)

    @response_handler
    async def answered(self, request: dict, verdict: Verdict, ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"{request['part']}:{verdict.approved}")


async def test_answering_one_of_two_child_requests_leaves_the_other_asked_once():
    workflow = parent(WorkflowBuilder(AskTwice(id="ask"), name="approval").build())
    paused = await workflow.run(4)
    by_part = {r.data["part"]: request_id for request_id, r in paused.pending_requests.items()}
    assert set(by_part) == {"a", "b"}

    stream = workflow.run(responses={by_part["a"]: Verdict(True, "kim")},
                          checkpoint=paused.checkpoint, stream=True)
    events = [event async for event in stream]
    answered = await stream.get_result()

    assert answered.get_outputs() == ["parent got a:True"]
    ((still_id, still),) = answered.pending_requests.items()
    assert still_id == by_part["b"]
    assert still.data == {"part": "b", "n": 4}
    assert [e for e in events if isinstance(e, RequestInfoEvent)] == []  # not re-asked


async def test_the_childs_whole_state_lives_inside_the_parents_snapshot():
    result = await parent(child(doubled=True)).run(5)

    child_state = result.checkpoint.head_snapshot.state["executor_states"]["sub"]["workflow"]
    assert set(child_state) == {"workflow_state", "executor_states", "edge_states", "messages"}
    assert child_state["executor_states"]["ask"] == {"n": 10}
    assert child_state["messages"]["input"] == [{"kind": "message", "data": 5}]
    (child_request,) = child_state["messages"]["pending"]["requests"]
    assert result.pending_requests[f"sub/{child_request}"].data == {"approve": 10}


async def test_a_nested_pause_resumes_from_storage_in_a_reloaded_checkpoint(storage):
    workflow = parent(child())
    checkpoint = workflow.create_checkpoint(checkpoint_id="nested-1", checkpoint_storage=storage)
    paused = await workflow.run(3, checkpoint=checkpoint)
    (request_id,) = paused.pending_requests

    reloaded = await storage.load("nested-1")
    done = await parent(child()).run(
        responses={request_id: Verdict(False, "lee")}, checkpoint=reloaded
    )

    assert done.get_outputs() == ["parent got 3:False:lee"]


async def test_changing_the_childs_topology_changes_the_parents_signature():
    plain, doubled = parent(child()), parent(child(doubled=True))

    assert plain.graph_signature_hash != doubled.graph_signature_hash
    assert parent(child()).graph_signature_hash == plain.graph_signature_hash
    paused = await plain.run(1)
    with pytest.raises(GraphSignatureMismatchError):
        await doubled.run(checkpoint=paused.checkpoint)


async def test_an_answer_of_the_wrong_type_is_refused_by_the_parent_and_changes_nothing():
    workflow = parent(child())
    paused = await workflow.run(7)
    (request_id,) = paused.pending_requests
    head = paused.checkpoint.head_snapshot_id

    with pytest.raises(InvalidResponseError) as caught:
        await workflow.run(responses={request_id: "yes"}, checkpoint=paused.checkpoint)

    assert caught.value.request_id == request_id
    assert paused.checkpoint.head_snapshot_id == head


async def test_requests_of_a_grandchild_surface_with_both_executor_ids():
    middle = parent(child(), sub_id="inner")
    workflow = parent(middle, sub_id="outer")
    paused = await workflow.run(4)
    ((request_id, request),) = paused.pending_requests.items()
    assert request_id.startswith("outer/inner/")
    assert request.response_type is Verdict

    done = await workflow.run(
        responses={request_id: Verdict(True, "ana")}, checkpoint=paused.checkpoint
    )

    assert done.get_outputs() == ["parent got parent got 4:True:ana"]


async def test_cancelling_a_nested_request_reaches_the_child():
    workflow = parent(child())
    paused = await workflow.run(7)
    (request_id,) = paused.pending_requests

    done = await workflow.run(
        responses={request_id: RequestCancelled("no reviewer")}, checkpoint=paused.checkpoint
    )

    assert done.status is RunStatus.IDLE
    child_state = done.checkpoint.head_snapshot.state["executor_states"]["sub"]["workflow"]
    assert child_state["messages"]["pending"]["requests"] == {}


async def test_a_failing_child_fails_the_parent_naming_the_nested_executor():
    broken = WorkflowBuilder(Boom(id="boom"), name="broken").build()

    with pytest.raises(WorkflowRunError) as caught:
        await parent(broken).run(1)

    assert caught.value.executor_id == "sub"
    assert isinstance(caught.value.__cause__, WorkflowRunError)
    assert caught.value.__cause__.executor_id == "boom"


async def test_runs_leave_nothing_on_the_parent_the_executor_or_the_child():
    workflow = parent(child(doubled=True))
    before = fingerprint(workflow)

    paused = await workflow.run(2)
    (request_id,) = paused.pending_requests
    await workflow.run(responses={request_id: Verdict(True, "kim")}, checkpoint=paused.checkpoint)

    assert fingerprint(workflow) == before


class Shout(Executor):
    @handler
    async def shout(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text.upper())


class Count(Executor):
    @handler
    async def count(self, n: int, ctx: WorkflowContext) -> None:
        await ctx.yield_output(n)


def test_a_childs_declared_outputs_are_type_checked_along_the_parents_edges():
    sub = WorkflowExecutor(WorkflowBuilder(Shout(id="shout")).build(), id="sub")

    with pytest.raises(
        WorkflowValidationError, match="'sub' sends str but 'count' accepts only int"
    ):
        WorkflowBuilder(sub).add_edge(sub, Count(id="count")).build()


async def test_a_functional_workflow_nests_like_any_other():
    @step
    async def triple(n: int) -> int:
        return n * 3

    @workflow
    async def tripled(n: int) -> str:
        return f"tripled {await triple(n)}"

    result = await parent(tripled).run(4)

    assert result.get_outputs() == ["parent got tripled 12"]
    steps = result.checkpoint.head_snapshot.state["executor_states"]["sub"]["workflow"]
    assert steps["executor_states"]["tripled"]["steps"] == {"triple#0": 12}
