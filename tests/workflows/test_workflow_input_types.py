"""Workflow.input_types and accepts_input(): what the start executor takes, in dispatch order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checkflow.workflows import Executor, WorkflowBuilder, WorkflowContext, handler


@dataclass
class Animal:
    name: str


@dataclass
class Dog(Animal):
    barks: bool = True


class BaseFirst(Executor):
    """Declares the base-class handler before the subclass one, then a catch-all."""

    @handler
    async def anything(self, value: Any, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output("anything")

    @handler
    async def animal(self, value: Animal, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output("animal")

    @handler
    async def text(self, value: str, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output("text")

    @handler
    async def dog(self, value: Dog, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output("dog")


class Unrelated(Executor):
    @handler
    async def number(self, value: int, ctx: WorkflowContext) -> None: ...

    @handler
    async def text(self, value: str, ctx: WorkflowContext) -> None: ...

    @handler
    async def pair(self, value: list[int] | bytes, ctx: WorkflowContext) -> None: ...


def test_unrelated_input_types_keep_declaration_order():
    workflow = WorkflowBuilder(start_executor=Unrelated(id="start")).build()
    assert workflow.input_types == (int, str, list[int] | bytes)


def test_a_subclass_handler_comes_before_its_base_and_any_comes_last():
    workflow = WorkflowBuilder(start_executor=BaseFirst(id="start")).build()
    assert workflow.input_types == (Dog, Animal, str, Any)


async def test_the_first_input_type_a_message_fits_is_the_handler_a_run_picks():
    workflow = WorkflowBuilder(start_executor=BaseFirst(id="start")).build()
    names = {Dog: "dog", Animal: "animal", str: "text", Any: "anything"}
    for message in (Dog("rex"), Animal("cat"), "hello", 42):
        first_fit = next(
            tp for tp in workflow.input_types if tp is Any or isinstance(message, tp)
        )
        result = await workflow.run(message)
        assert result.get_outputs() == [names[first_fit]]


def test_accepts_input_answers_whether_the_start_executor_has_a_handler():
    workflow = WorkflowBuilder(start_executor=Unrelated(id="start")).build()
    assert workflow.accepts_input(3) and workflow.accepts_input([1, 2])
    assert not workflow.accepts_input(1.5)
    assert not workflow.accepts_input(["not", "ints"])
