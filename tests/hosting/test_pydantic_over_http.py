"""Pydantic models as input and response types over HTTP, and 422s that name the field.

A workflow takes a pydantic ``Order`` and asks for a pydantic ``Approval``; the JSON bodies
reach its handlers as model instances (``model_validate``), the pending request shows the
model's own JSON Schema, and a body that does not fit answers 422 naming the field and the
reason, for pydantic models and for dataclasses / msgspec Structs alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import msgspec
import pytest
from pydantic import BaseModel, Field

from checkflow.hosting import WorkflowHost, create_app
from checkflow.state import register_state_type
from checkflow.workflows import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


class Line(BaseModel):
    sku: str
    quantity: int = Field(gt=0)


class Order(BaseModel):
    customer: str
    lines: list[Line]


class Approval(BaseModel):
    approved: bool
    note: str = ""


@dataclass
class Refund:
    order_id: str
    amount: int


class Ticket(msgspec.Struct):
    subject: str
    priority: int


for _type in (Line, Order, Approval, Refund, Ticket):  # the codec stores them in snapshots
    register_state_type(_type, type_id=f"tests.hosting.pydantic_http.{_type.__name__}")


class Desk(Executor):
    @handler
    async def order(self, order: Order, ctx: WorkflowContext) -> None:
        assert isinstance(order, Order) and isinstance(order.lines[0], Line)
        total = sum(line.quantity for line in order.lines)
        await ctx.request_info({"customer": order.customer, "items": total},
                               response_type=Approval)

    @handler
    async def refund(self, refund: Refund, ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"refund {refund.amount}")

    @handler
    async def ticket(self, ticket: Ticket, ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"ticket {ticket.subject}")

    @response_handler
    async def decided(self, request: dict, approval: Approval, ctx: WorkflowContext) -> None:
        assert isinstance(approval, Approval)
        verdict = "approved" if approval.approved else "rejected"
        await ctx.yield_output(f"{verdict} {request['items']} item(s) {approval.note}".strip())


def build() -> Workflow:
    return WorkflowBuilder(start_executor=Desk("desk"), name="desk").build()


@pytest.fixture
async def client() -> Any:
    app = create_app(WorkflowHost(build()))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test") as c:
        yield c


async def test_pydantic_input_and_response_types_work_end_to_end(client: Any) -> None:
    order = {"customer": "ada", "lines": [{"sku": "a", "quantity": 2}, {"sku": "b",
                                                                          "quantity": 3}]}
    paused = await client.post("/v1/conversations/o1/runs", json={"message": order})
    assert paused.status_code == 200, paused.text
    body = paused.json()
    assert body["status"] == "awaiting_responses"
    (request,) = body["pending_requests"]
    assert request["data"] == {"customer": "ada", "items": 5}
    schema = request["response_schema"]
    assert schema["properties"]["approved"]["type"] == "boolean"
    assert schema["required"] == ["approved"]
    shown = (await client.get("/v1/conversations/o1")).json()  # as stored, after a reload
    assert shown["pending_requests"][0]["response_schema"] == schema
    done = await client.post("/v1/conversations/o1/runs", json={
        "responses": {request["request_id"]: {"approved": True, "note": "ok"}},
        "resume_token": body["resume_token"]})
    assert done.status_code == 200, done.text
    assert done.json()["outputs"] == ["approved 5 item(s) ok"]


async def test_an_answer_that_does_not_fit_the_model_is_422_naming_the_field(
    client: Any,
) -> None:
    order = {"customer": "ada", "lines": [{"sku": "a", "quantity": 1}]}
    paused = (await client.post("/v1/conversations/o1/runs", json={"message": order})).json()
    request_id = paused["pending_requests"][0]["request_id"]
    bad = await client.post("/v1/conversations/o1/runs", json={
        "responses": {request_id: {"approved": "perhaps"}}})
    assert bad.status_code == 422
    error = bad.json()["error"]
    assert (error["code"], error["request_id"], error["field"]) == (
        "invalid_response", request_id, "$.approved")
    assert "boolean" in error["reason"]
    again = (await client.get("/v1/conversations/o1")).json()  # nothing was lost
    assert again["pending_requests"][0]["request_id"] == request_id


@pytest.mark.parametrize(("message", "field", "said"), [
    ({"customer": "ada", "lines": [{"sku": "a", "quantity": 0}]}, "$.lines[0].quantity",
     "greater than 0"),
    ({"customer": "ada", "lines": [{"sku": "a"}]}, "$.lines[0].quantity", "required"),
    ({"customer": "ada"}, "$.lines", "required"),
])
async def test_a_message_that_fits_no_type_is_422_naming_the_field_and_reason(
    message: Any, field: str, said: str, client: Any
) -> None:
    response = await client.post("/v1/conversations/m/runs", json={"message": message})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_message"
    assert error["field"] == field, error
    assert said in error["reason"].lower()
    assert field in error["message"]
    assert "test_pydantic_over_http.Order" in error["accepted_types"]


@pytest.mark.parametrize(("message", "field"), [
    ({"order_id": "o-1", "amount": "ten"}, "$.amount"),
    ({"subject": "help", "priority": []}, "$.priority"),
])
async def test_dataclass_and_struct_messages_name_the_field_too(
    message: Any, field: str, client: Any
) -> None:
    response = await client.post("/v1/conversations/m/runs", json={"message": message})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == field and "Expected `int`" in error["reason"]


async def test_a_fitting_dataclass_message_still_runs(client: Any) -> None:
    done = await client.post("/v1/conversations/r/runs",
                             json={"message": {"order_id": "o-1", "amount": 10}})
    assert done.json()["outputs"] == ["refund 10"]
