"""Answers to pending requests: conversion to the declared type, errors, cancellation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import pytest

from checkflow.errors import InvalidResponseError, WorkflowRunError
from checkflow.state import register_state_type
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import (
    Executor,
    RequestCancelled,
    RequestCancelledEvent,
    RunStatus,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


@dataclass
class Address:
    city: str
    zip: str


class Shipping(msgspec.Struct):
    address: Address
    express: bool


class Money:
    """A to_dict/from_dict class, registered explicitly."""

    def __init__(self, cents: int) -> None:
        self.cents = cents

    def to_dict(self) -> dict[str, int]:
        return {"cents": self.cents}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Money:
        if not isinstance(raw.get("cents"), int):
            raise ValueError("cents must be an int")
        return cls(raw["cents"])


register_state_type(Money, type_id="tests.workflows.Money")


class Asker(Executor):
    """Asks for whatever type its message names; echoes the typed answer as output."""

    @handler
    async def ask(self, kind: str, ctx: WorkflowContext) -> None:
        types = {"shipping": Shipping, "money": Money, "int": int, "any": Any}
        await ctx.request_info({"kind": kind}, response_type=types[kind], request_id=kind)

    @response_handler
    async def shipping(self, req: dict, answer: Shipping, ctx: WorkflowContext) -> None:
        await ctx.yield_output(answer)

    @response_handler
    async def money(self, req: dict, answer: Money, ctx: WorkflowContext) -> None:
        await ctx.yield_output(answer.cents)

    @response_handler
    async def number(self, req: dict, answer: int | RequestCancelled, ctx: WorkflowContext) -> None:
        await ctx.yield_output(answer)

    @response_handler
    async def anything(self, req: dict, answer: Any, ctx: WorkflowContext) -> None:
        await ctx.yield_output(answer)


workflow = WorkflowBuilder(start_executor=Asker(id="asker")).build()


async def ask(kind: str, answer: Any) -> list[Any]:
    paused = await workflow.run(kind)
    result = await workflow.run(responses={kind: answer}, checkpoint=paused.checkpoint)
    return result.get_outputs()


async def test_a_dict_answer_becomes_the_declared_struct_with_nested_dataclasses():
    (answer,) = await ask("shipping", {"address": {"city": "Oslo", "zip": "0150"}, "express": True})
    assert answer == Shipping(Address("Oslo", "0150"), True)


async def test_an_answer_of_the_wrong_shape_names_the_request_the_type_and_the_path():
    paused = await workflow.run("shipping")
    count = len(paused.checkpoint.snapshots)
    with pytest.raises(InvalidResponseError) as caught:
        await workflow.run(
            responses={"shipping": {"address": {"city": "Oslo", "zip": 150}, "express": True}},
            checkpoint=paused.checkpoint,
        )
    message = str(caught.value)
    assert "'shipping'" in message and "test_request_responses.Shipping" in message
    assert "$.address.zip" in message
    assert caught.value.request_id == "shipping"
    assert len(paused.checkpoint.snapshots) == count


async def test_conversion_is_strict():
    with pytest.raises(InvalidResponseError, match="must be int"):
        await ask("int", "42")


async def test_a_from_dict_class_is_built_through_its_own_constructor():
    assert await ask("money", {"cents": 250}) == [250]
    with pytest.raises(InvalidResponseError, match="cents must be an int"):
        await ask("money", {"cents": "lots"})


async def test_an_any_response_is_not_checked():
    assert await ask("any", {"free": ["form", 1]}) == [{"free": ["form", 1]}]


async def test_a_cancellation_reaches_a_handler_that_accepts_it():
    paused = await workflow.run("int")
    result = await workflow.run(
        responses={"int": RequestCancelled("too late")}, checkpoint=paused.checkpoint
    )
    assert result.get_outputs() == [RequestCancelled("too late")]
    assert result.pending_requests == {}
    (event,) = [e for e in result.events if isinstance(e, RequestCancelledEvent)]
    assert event.delivered and event.request_id == "int"


class YesNo(Executor):
    @handler
    async def ask(self, question: str, ctx: WorkflowContext) -> None:
        await ctx.request_info(question, response_type=bool, request_id="yes-no")

    @response_handler
    async def answered(self, question: str, yes: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output(yes)


async def test_a_cancellation_a_handler_does_not_accept_is_dropped_with_an_event():
    yes_no = WorkflowBuilder(start_executor=YesNo(id="yes-no")).build()
    paused = await yes_no.run("sure?")
    result = await yes_no.run(
        responses={"yes-no": RequestCancelled()}, checkpoint=paused.checkpoint
    )
    assert result.get_outputs() == []
    assert result.status is RunStatus.IDLE
    (event,) = [e for e in result.events if isinstance(e, RequestCancelledEvent)]
    assert not event.delivered
    assert result.checkpoint.head_snapshot.metadata["boundary"] == "input_accepted"


async def test_asking_for_a_type_no_response_handler_accepts_fails_the_requester():
    class Careless(Executor):
        @handler
        async def ask(self, n: int, ctx: WorkflowContext) -> None:
            await ctx.request_info(n, response_type=str)

        @response_handler
        async def got(self, req: int, answer: bool, ctx: WorkflowContext) -> None:
            pass

    careless = WorkflowBuilder(start_executor=Careless(id="careless")).build()
    with pytest.raises(
        WorkflowRunError, match="no @response_handler accepting a int request answered with str"
    ):
        await careless.run(1)


@dataclass(frozen=True)
class Ticket:
    """Registered with the codec, named by no handler annotation."""

    number: int


register_state_type(Ticket, type_id="tests.workflows.requests.Ticket")


class Unregistered:
    pass


class AnyAnswer(Executor):
    """Asks for whatever type its start message names; its response handler takes anything."""

    @handler
    async def ask(self, kind: str, ctx: WorkflowContext) -> None:
        types = {"ticket": Ticket, "numbers": list[int], "unregistered": Unregistered}
        await ctx.request_info(kind, response_type=types[kind], request_id=kind)

    @response_handler
    async def answered(self, kind: str, answer: Any, ctx: WorkflowContext) -> None:
        await ctx.yield_output(answer)

    @response_handler
    async def numbers(self, kind: str, answer: list[int], ctx: WorkflowContext) -> None:
        await ctx.yield_output(sum(answer))


async def test_a_registered_state_type_is_a_response_type_that_survives_a_reload(tmp_path):
    workflow = WorkflowBuilder(start_executor=AnyAnswer(id="asker")).build()
    storage = FileCheckpointStorage(tmp_path)
    checkpoint = workflow.create_checkpoint(checkpoint_id="t", checkpoint_storage=storage)
    await workflow.run("ticket", checkpoint=checkpoint)

    stored = checkpoint.head_snapshot.state["messages"]["pending"]["requests"]["ticket"]
    assert stored["response_type"] == "state:tests.workflows.requests.Ticket"
    reloaded = await storage.load("t")
    rebuilt = WorkflowBuilder(start_executor=AnyAnswer(id="asker")).build()
    bare = await rebuilt.run(checkpoint=reloaded)
    assert bare.pending_requests["ticket"].response_type is Ticket

    result = await rebuilt.run(responses={"ticket": {"number": 7}}, checkpoint=reloaded)
    assert result.get_outputs() == [Ticket(7)]


async def test_a_generic_response_type_equal_to_a_handler_annotation_is_accepted():
    workflow = WorkflowBuilder(start_executor=AnyAnswer(id="asker")).build()
    paused = await workflow.run("numbers")
    assert paused.pending_requests["numbers"].response_type == list[int]

    result = await workflow.run(responses={"numbers": [1, 2, 3]}, checkpoint=paused.checkpoint)
    assert result.get_outputs() == [6]


async def test_an_unrestorable_response_type_fails_the_requester_naming_the_remedy():
    workflow = WorkflowBuilder(start_executor=AnyAnswer(id="asker")).build()
    with pytest.raises(WorkflowRunError) as caught:
        await workflow.run("unregistered", checkpoint=workflow.create_checkpoint())

    message = str(caught.value.__cause__)
    assert "Unregistered cannot be restored" in message
    assert "register_state_type" in message
    assert caught.value.result.checkpoint.head_snapshot.metadata["boundary"] == "input_accepted"
