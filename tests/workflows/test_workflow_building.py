"""WorkflowBuilder.build(): what it refuses (each with a precise message) and what it records."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Never

import msgspec
import pytest
from engine_samples import Forward

from checkflow.errors import WorkflowValidationError
from checkflow.state import is_registered
from checkflow.workflows import (
    Case,
    Default,
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    executor,
    handler,
    response_handler,
)


class StrSink(Executor):
    @handler
    async def take(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(text)


class IntSink(Executor):
    @handler
    async def take(self, n: int, ctx: WorkflowContext) -> None:
        await ctx.yield_output(n)


class ListSink(Executor):
    @handler
    async def take(self, items: list[int], ctx: WorkflowContext) -> None:
        await ctx.yield_output(items)


class Unchecked(Executor):
    @handler
    async def go(self, n: int, ctx: WorkflowContext) -> None:
        await ctx.send_message(str(n))


def test_an_edge_whose_types_cannot_meet_is_refused():
    source, sink = Forward(id="numbers"), StrSink(id="texts")
    with pytest.raises(WorkflowValidationError) as caught:
        WorkflowBuilder(start_executor=source).add_edge(source, sink).build()
    assert str(caught.value) == (
        "type mismatch on edge 'numbers' -> 'texts' (edge): 'numbers' sends int but 'texts' "
        "accepts only str"
    )


def test_a_fan_in_target_must_accept_a_list_of_what_the_sources_send():
    a, b, sink = Forward(id="a"), Forward(id="b"), IntSink(id="sink")
    builder = WorkflowBuilder(start_executor=a).add_fan_out_edges(a, [b])
    with pytest.raises(
        WorkflowValidationError,
        match=r"'a' sends list\[int\] but 'sink' "
        r"accepts only int",
    ):
        builder.add_fan_in_edges([a, b], sink).build()
    ok = Forward(id="a2"), Forward(id="b2"), ListSink(id="lists")
    WorkflowBuilder(start_executor=ok[0]).add_edge(ok[0], ok[1]).add_fan_in_edges(
        [ok[0], ok[1]], ok[2]
    ).build()


def test_a_bare_context_is_unchecked():
    source, sink = Unchecked(id="any"), StrSink(id="texts")
    WorkflowBuilder(start_executor=source).add_edge(source, sink).build()


def test_an_executor_not_reachable_from_the_start_is_refused():
    a, b, c = Forward(id="a"), IntSink(id="b"), Forward(id="c")
    with pytest.raises(WorkflowValidationError) as caught:
        WorkflowBuilder(start_executor=a).add_edge(a, b).add_edge(c, b).build()
    assert str(caught.value) == "executor 'c' is not reachable from the start executor 'a'"


def test_the_same_edge_twice_is_refused():
    a, b = Forward(id="a"), IntSink(id="b")
    with pytest.raises(WorkflowValidationError) as caught:
        WorkflowBuilder(start_executor=a).add_edge(a, b).add_fan_out_edges(a, [b]).build()
    assert str(caught.value) == (
        "duplicate edge 'a' -> 'b': it appears in 'edge:a->b' and 'fan_out:a->b'"
    )


def test_two_executors_with_one_id_are_refused():
    a, b = Forward(id="same"), IntSink(id="same")
    with pytest.raises(WorkflowValidationError, match="duplicate executor id 'same'"):
        WorkflowBuilder(start_executor=a).add_edge(a, b).build()


@pytest.mark.parametrize("defaults", [0, 2])
def test_a_switch_group_needs_exactly_one_default(defaults):
    a, b, c = Forward(id="a"), IntSink(id="b"), IntSink(id="c")
    cases: list[Case | Default] = [Case(condition=lambda n: n > 0, target=b)]
    cases += [Default(target=c)] * defaults
    with pytest.raises(WorkflowValidationError) as caught:
        WorkflowBuilder(start_executor=a).add_switch_case_edge_group(a, cases).build()
    assert str(caught.value) == (
        f"the switch-case group from 'a' needs exactly one Default, it has {defaults}"
    )


def test_an_executor_without_handlers_is_refused():
    class Empty(Executor):
        pass

    with pytest.raises(WorkflowValidationError, match=r"executor 'e' .* has no @handler methods"):
        WorkflowBuilder(start_executor=Empty(id="e")).build()


def test_a_handler_without_a_message_annotation_is_refused():
    class Sloppy(Executor):
        @handler
        async def go(self, n, ctx: WorkflowContext) -> None:  # type: ignore[no-untyped-def]
            pass

    with pytest.raises(WorkflowValidationError, match="parameter 'n' needs a type annotation"):
        WorkflowBuilder(start_executor=Sloppy(id="s")).build()


def test_an_unresolvable_string_annotation_is_refused_with_its_name():
    class Unresolvable(Executor):
        @handler
        async def go(self, n: NotDefinedAnywhere, ctx: WorkflowContext) -> None:  # type: ignore[name-defined]  # noqa: F821
            pass

    with pytest.raises(WorkflowValidationError, match="NotDefinedAnywhere"):
        WorkflowBuilder(start_executor=Unresolvable(id="f")).build()


def test_max_iterations_must_be_positive():
    with pytest.raises(WorkflowValidationError, match="max_iterations must be a positive int"):
        WorkflowBuilder(start_executor=IntSink(id="x"), max_iterations=0).build()


def test_edges_take_executors_only():
    with pytest.raises(TypeError, match="must be an Executor, got str"):
        WorkflowBuilder(start_executor=IntSink(id="x")).add_edge("x", "y")  # type: ignore[arg-type]


@dataclass
class Ticket:
    title: str


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Verdict(msgspec.Struct):
    ok: bool


class Triage(Executor):
    @handler
    async def go(self, ticket: Ticket, ctx: WorkflowContext[Priority]) -> None:
        await ctx.request_info(ticket, response_type=Verdict)

    @response_handler
    async def answered(self, ticket: Ticket, verdict: Verdict, ctx: WorkflowContext) -> None:
        pass


def test_build_registers_the_classes_handlers_name_with_the_state_codec():
    assert not any(map(is_registered, (Ticket, Priority, Verdict)))
    WorkflowBuilder(start_executor=Triage(id="triage")).build()
    assert all(map(is_registered, (Ticket, Priority, Verdict)))


def test_edge_group_ids_are_derived_from_topology():
    a, b, c = Forward(id="a"), Forward(id="b"), ListSink(id="c")
    workflow = WorkflowBuilder(start_executor=a).add_edge(a, b).add_fan_in_edges([a, b], c).build()
    assert [g.id for g in workflow.edge_groups] == ["edge:a->b", "fan_in:a,b->c"]


def test_a_function_becomes_an_executor():
    @executor(id="double")
    async def double(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n * 2)

    @executor
    def shout(text: str) -> str:
        return text.upper()

    assert double.id == "double" and shout.id == "shout"
    with pytest.raises(WorkflowValidationError, match="'double' sends int but 'shout'"):
        WorkflowBuilder(start_executor=double).add_edge(double, shout).build()


def test_a_workflow_is_immutable():
    workflow = WorkflowBuilder(start_executor=IntSink(id="x")).build()
    with pytest.raises(AttributeError):
        workflow.max_iterations = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        workflow.executors["y"] = IntSink(id="y")  # type: ignore[index]


def test_a_handler_declared_to_send_nothing_cannot_feed_an_edge():
    class Quiet(Executor):
        @handler
        async def go(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
            await ctx.yield_output(n)

    quiet, sink = Quiet(id="quiet"), IntSink(id="sink")
    with pytest.raises(WorkflowValidationError, match="'quiet' sends nothing but 'sink'"):
        WorkflowBuilder(start_executor=quiet).add_edge(quiet, sink).build()
