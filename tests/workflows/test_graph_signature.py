"""The graph signature: stable across builds and processes, different for any change."""

from __future__ import annotations

from dataclasses import dataclass

import engine_samples
import pytest
from engine_samples import Halver, Start, build_factor, build_review, run_fresh

from checkflow.errors import GraphSignatureMismatchError
from checkflow.workflows import (
    Executor,
    RunStatus,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


def test_the_same_definition_hashes_the_same_in_a_fresh_process():
    here = (build_factor().graph_signature_hash, build_review().graph_signature_hash)
    there = tuple(run_fresh("signature").split())
    assert here == there
    assert len(here[0]) == 64


def test_the_name_and_max_iterations_do_not_change_the_signature():
    start, worker = Start(id="start"), Halver(id="worker")
    other = (
        WorkflowBuilder(start_executor=start, name="renamed", max_iterations=7)
        .add_edge(start, worker)
        .add_edge(worker, worker)
        .build()
    )
    assert other.graph_signature_hash == build_factor().graph_signature_hash


def _variants():
    start, worker = Start(id="start"), Halver(id="worker")
    renamed = Halver(id="halver")

    class Halver2(Halver):
        pass

    class TypedDifferently(Halver):  # the same class name, handlers and edges as Halver
        @handler
        async def step(self, n: int, ctx: WorkflowContext[int, str]) -> None:
            pass

    TypedDifferently.__module__, TypedDifferently.__qualname__ = (
        Halver.__module__, Halver.__qualname__)
    retyped = TypedDifferently(id="worker")

    yield (
        "executor renamed",
        (WorkflowBuilder(start_executor=start).add_edge(start, renamed).add_edge(renamed, renamed)),
    )
    yield (
        "edge added",
        (
            WorkflowBuilder(start_executor=start)
            .add_edge(start, worker)
            .add_edge(worker, worker)
            .add_edge(worker, start)
        ),
    )
    yield (
        "edge kind changed",
        (
            WorkflowBuilder(start_executor=start)
            .add_fan_out_edges(start, [worker])
            .add_edge(worker, worker)
        ),
    )
    subclassed = Halver2(id="worker")
    yield (
        "executor class changed",
        (
            WorkflowBuilder(start_executor=start)
            .add_edge(start, subclassed)
            .add_edge(subclassed, subclassed)
        ),
    )
    yield (
        "handler types changed",
        (WorkflowBuilder(start_executor=start).add_edge(start, retyped).add_edge(retyped, retyped)),
    )


@pytest.mark.parametrize("change", [name for name, _ in _variants()])
def test_any_topology_or_type_change_changes_the_signature(change):
    changed = dict(_variants())[change].build()
    assert changed.graph_signature_hash != build_factor().graph_signature_hash


class SendsInts(Executor):
    @handler
    async def finish(self, n: int, ctx: WorkflowContext[int]) -> None:
        pass


class SendsStrs(Executor):
    @handler
    async def finish(self, n: int, ctx: WorkflowContext[str]) -> None:
        pass


SendsStrs.__qualname__ = SendsInts.__qualname__  # one class name: only the handler differs


def test_a_handler_declaring_other_output_types_changes_the_signature():
    def graph(last: Executor) -> str:
        start = Start(id="start")
        return WorkflowBuilder(start_executor=start).add_edge(start, last).build(
            ).graph_signature_hash

    assert graph(SendsInts(id="last")) == graph(SendsInts(id="last"))
    assert graph(SendsInts(id="last")) != graph(SendsStrs(id="last"))


def test_the_start_executor_is_part_of_the_signature():
    def cycle_started_at(first: str) -> str:
        a, b = Start(id="a"), Start(id="b")
        start = a if first == "a" else b
        return WorkflowBuilder(start_executor=start).add_edge(a, b).add_edge(b, a).build(
            ).graph_signature_hash

    assert cycle_started_at("a") == cycle_started_at("a")
    assert cycle_started_at("a") != cycle_started_at("b")


class Nested(Executor):
    """Stands in for a nested workflow: its child's signature enters its own."""

    def __init__(self, id: str, child_signature: str) -> None:
        super().__init__(id)
        self._child = child_signature

    def signature_extra(self) -> dict[str, str]:
        return {"child": self._child}

    @handler
    async def go(self, n: int, ctx: WorkflowContext) -> None:
        pass


def test_a_change_inside_a_nested_definition_changes_the_parent_signature():
    def parent(child: str) -> str:
        start = Start(id="start")
        nested = Nested(id="nested", child_signature=child)
        return (
            WorkflowBuilder(start_executor=start)
            .add_edge(start, nested)
            .build()
            .graph_signature_hash
        )

    assert parent(build_factor().graph_signature_hash) == parent(
        build_factor().graph_signature_hash
    )
    assert parent(build_factor().graph_signature_hash) != parent(
        build_review().graph_signature_hash
    )


async def test_a_checkpoint_of_another_graph_is_refused_before_anything_is_restored(storage):
    workflow = build_factor()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    await workflow.run(10, checkpoint=checkpoint)
    before = [s.snapshot_id for s in checkpoint.snapshots]
    for name, builder in _variants():
        other = builder.build()
        loaded = await storage.load(checkpoint.checkpoint_id)
        with pytest.raises(GraphSignatureMismatchError) as caught:
            await other.run(checkpoint=loaded)
        assert caught.value.expected == other.graph_signature_hash, name
        assert caught.value.actual == workflow.graph_signature_hash, name
        assert workflow.graph_signature_hash in str(caught.value)
        assert other.graph_signature_hash in str(caught.value)
        assert [s.snapshot_id for s in loaded.snapshots] == before
    reloaded = await storage.load(checkpoint.checkpoint_id)
    assert [s.snapshot_id for s in reloaded.snapshots] == before
    result = await engine_samples.build_factor().run(checkpoint=reloaded)
    assert result.status is RunStatus.AWAITING_RESPONSES  # an identical rebuild resumes


async def test_a_checkpoint_is_refused_when_a_nested_workflow_changed():
    from checkflow.workflows import WorkflowExecutor

    def parent(child):
        start = Start(id="start")
        nested = WorkflowExecutor(child, id="nested")
        return WorkflowBuilder(start_executor=start).add_edge(start, nested).build()

    worker = Halver(id="worker")
    changed_child = (WorkflowBuilder(start_executor=worker, name="factor").build())
    original, rebuilt, changed = (parent(build_factor()), parent(build_factor()),
                                  parent(changed_child))
    assert original.graph_signature_hash == rebuilt.graph_signature_hash
    assert original.graph_signature_hash != changed.graph_signature_hash
    paused = await original.run(4)
    with pytest.raises(GraphSignatureMismatchError):
        await changed.run(checkpoint=paused.checkpoint)
    assert (await rebuilt.run(checkpoint=paused.checkpoint)).status is paused.status


@dataclass
class Verdict:
    """A response type only the asking workflow's handlers name: no other graph restores it."""

    approved: bool


class Asker(Executor):
    @handler
    async def ask(self, n: int, ctx: WorkflowContext) -> None:
        await ctx.request_info({"n": n}, response_type=Verdict)

    @response_handler
    async def on_verdict(self, request: dict, verdict: Verdict, ctx: WorkflowContext) -> None:
        pass


async def test_the_signature_is_checked_before_a_pending_request_is_restored(storage):
    asking = WorkflowBuilder(start_executor=Asker(id="asker")).build()
    paused = await asking.run(1, checkpoint=asking.create_checkpoint(checkpoint_storage=storage))
    assert paused.status is RunStatus.AWAITING_RESPONSES
    before = [s.snapshot_id for s in paused.checkpoint.snapshots]
    loaded = await storage.load(paused.checkpoint.checkpoint_id)
    other = build_factor()  # cannot resolve Verdict: restoring first would fail differently
    with pytest.raises(GraphSignatureMismatchError) as caught:
        await other.run(checkpoint=loaded)
    assert caught.value.actual == asking.graph_signature_hash
    assert [s.snapshot_id for s in loaded.snapshots] == before
    reloaded = await storage.load(paused.checkpoint.checkpoint_id)
    assert [s.snapshot_id for s in reloaded.snapshots] == before
