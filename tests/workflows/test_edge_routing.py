"""Edge kinds: conditional, switch-case, multi-selection, fan-out, fan-in (restorable)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest
from engine_samples import Forward

from checkflow.workflows import (
    Case,
    Default,
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    executor,
    handler,
)


class Tag(Executor):
    @handler
    async def tag(self, n: int, ctx: WorkflowContext[int, str]) -> None:
        await ctx.yield_output(f"{self.id}:{n}")


async def is_even(n: int) -> bool:
    return n % 2 == 0


@pytest.mark.parametrize("condition", [lambda n: n % 2 == 0, is_even], ids=["sync", "async"])
async def test_a_conditional_edge_passes_only_what_its_condition_accepts(condition):
    source, even = Forward(id="source"), Tag(id="even")
    workflow = WorkflowBuilder(start_executor=source).add_edge(source, even, condition).build()
    assert (await workflow.run(4)).get_outputs() == ["even:4"]
    assert (await workflow.run(3)).get_outputs() == []


async def test_a_switch_takes_the_first_case_that_holds_else_the_default():
    source, small, even, other = (Forward(id="s"), Tag(id="small"), Tag(id="even"), Tag(id="other"))
    workflow = (
        WorkflowBuilder(start_executor=source)
        .add_switch_case_edge_group(
            source,
            [
                Case(condition=lambda n: n < 3, target=small),
                Case(condition=is_even, target=even),
                Default(target=other),
            ],
        )
        .build()
    )
    outputs = [(await workflow.run(n)).get_outputs() for n in (2, 4, 5)]
    assert outputs == [["small:2"], ["even:4"], ["other:5"]]


async def test_a_multi_selection_sends_to_the_targets_the_function_picks():
    source, a, b, c = Forward(id="s"), Tag(id="a"), Tag(id="b"), Tag(id="c")

    def pick(n: int, targets: list[str]) -> list[str]:
        assert targets == ["a", "b", "c"]
        return targets[:n]

    workflow = (
        WorkflowBuilder(start_executor=source)
        .add_multi_selection_edge_group(source, [a, b, c], pick)
        .build()
    )
    assert sorted((await workflow.run(2)).get_outputs()) == ["a:2", "b:2"]


async def test_a_message_sent_to_a_target_id_goes_only_there():
    @executor(id="router")
    async def router(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n, target_id="b")

    a, b = Tag(id="a"), Tag(id="b")
    workflow = WorkflowBuilder(start_executor=router).add_fan_out_edges(router, [a, b]).build()
    assert (await workflow.run(1)).get_outputs() == ["b:1"]


async def test_a_message_to_an_unconnected_target_fails_the_sender():
    @executor(id="lost")
    async def lost(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n, target_id="nowhere")

    workflow = WorkflowBuilder(start_executor=lost).add_edge(lost, Tag(id="a")).build()
    with pytest.raises(Exception, match="executor 'lost' has no edge to 'nowhere'"):
        await workflow.run(1)


class Join(Executor):
    @handler
    async def join(self, items: list[int], ctx: WorkflowContext[int, list[int]]) -> None:
        await ctx.yield_output(items)


def fan_in_workflow():
    start, fast, slow, slower, join = (
        Forward(id="start"),
        Forward(id="fast"),
        Forward(id="slow"),
        Forward(id="slower"),
        Join(id="join"),
    )
    return (
        WorkflowBuilder(start_executor=start)
        .add_fan_out_edges(start, [fast, slow])
        .add_edge(slow, slower)
        .add_fan_in_edges([fast, slower], join)
        .build()
    )


async def test_a_fan_in_delivers_one_list_once_every_source_has_sent():
    result = await fan_in_workflow().run(7)
    assert result.get_outputs() == [[7, 7]]


async def test_a_fan_in_buffer_survives_a_restore_between_its_sources(storage):
    workflow = fan_in_workflow()
    checkpoint = workflow.create_checkpoint(checkpoint_storage=storage)
    await workflow.run(7, checkpoint=checkpoint)
    # superstep 2: "fast" sent (buffered), "slow" passed on; "slower" sends in superstep 3
    between = next(s for s in checkpoint.snapshots if s.metadata["superstep"] == 2)
    assert between.state["edge_states"] == {"fan_in:fast,slower->join": {"buffers": {"fast": [7]}}}
    loaded = await storage.load(checkpoint.checkpoint_id)
    loaded.restart_from(between.snapshot_id)
    result = await fan_in_workflow().run(checkpoint=loaded)
    assert result.get_outputs() == [[7, 7]]
    assert loaded.head_snapshot.state["edge_states"] == {}


class Picky(Executor):
    @handler
    async def only_text(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(f"text:{text}")


class Mixed(Executor):
    @handler
    async def go(self, n: int, ctx: WorkflowContext[int | str]) -> None:
        await ctx.send_message(n)
        await ctx.send_message(str(n))


async def test_a_message_no_handler_of_the_target_accepts_is_not_delivered():
    mixed, picky = Mixed(id="mixed"), Picky(id="picky")
    workflow = WorkflowBuilder(start_executor=mixed).add_edge(mixed, picky).build()
    assert (await workflow.run(3)).get_outputs() == ["text:3"]


@dataclass
class Animal:
    name: str = "rex"


@dataclass
class Dog(Animal):
    pass


class Dispatch(Executor):
    @handler
    async def animal(self, pet: Animal, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output("animal")

    @handler
    async def dog(self, pet: Dog, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output("dog")

    @handler
    async def anything(self, value: object, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output("object")


async def test_several_handlers_dispatch_to_the_most_specific():
    workflow = WorkflowBuilder(start_executor=Dispatch(id="d")).build()
    outputs = [(await workflow.run(v)).get_outputs() for v in (Dog(), Animal(), 5)]
    assert outputs == [["dog"], ["animal"], ["object"]]


async def test_the_start_executor_refuses_a_message_it_has_no_handler_for():
    workflow = WorkflowBuilder(start_executor=Picky(id="picky")).build()
    checkpoint = workflow.create_checkpoint()
    with pytest.raises(TypeError, match="the start executor 'picky' has no handler for a int"):
        await workflow.run(5, checkpoint=checkpoint)
    assert checkpoint.snapshots == []


async def test_a_sync_function_executor_runs_in_a_worker_thread():
    loop_thread = threading.get_ident()

    @executor
    def where(n: int) -> bool:
        return threading.get_ident() == loop_thread

    sink = Tag(id="sink")
    workflow = WorkflowBuilder(start_executor=where).add_edge(where, sink).build()
    assert (await workflow.run(1)).get_outputs() == ["sink:False"]


async def test_an_async_function_taking_only_the_message_sends_its_return_value():
    @executor(id="inc")
    async def inc(n: int) -> int:
        return n + 1

    sink = Tag(id="sink")
    workflow = WorkflowBuilder(start_executor=inc).add_edge(inc, sink).build()
    assert (await workflow.run(1)).get_outputs() == ["sink:2"]


async def test_a_sync_function_executor_runs_and_its_return_value_is_sent_on():
    @executor
    def double(n: int) -> int:
        return n * 2

    sink = Tag(id="sink")
    workflow = WorkflowBuilder(start_executor=double).add_edge(double, sink).build()
    assert (await workflow.run(21)).get_outputs() == ["sink:42"]
