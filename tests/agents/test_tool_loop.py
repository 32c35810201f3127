"""The tool loop of OpenAIChatAgent against a respx-scripted model: calls, parallel calls, bad
arguments, unknown tools, failures, a model that never stops, and what the session keeps."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any

import msgspec
import pydantic
import pytest

from checkflow.agents import (
    AgentResponse,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    OpenAIChatAgent,
    ToolContext,
    UsageDetails,
    tool,
)
from checkflow.errors import MaxToolRoundsError, ToolArgumentsError
from tests.llm_script import BASE_URL, Serve, call, reply

WEATHER_DEFINITION = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {}}}}


@tool
def lookup_order(order_id: Annotated[str, msgspec.Meta(description="The order number")],
                 verbose: bool = False) -> dict[str, Any]:
    """Look an order up by its number.

    This paragraph is not part of the description."""
    return {"order_id": order_id, "status": "shipped", "verbose": verbose}


class Address(pydantic.BaseModel):
    city: str
    zip: int



def agent(*tools: Any, **kwargs: Any) -> OpenAIChatAgent:
    return OpenAIChatAgent("m", base_url=BASE_URL, api_key="k", tools=tools, **kwargs)


def test_a_tool_reads_its_name_description_and_schema_from_the_function() -> None:
    assert lookup_order.name == "lookup_order"
    assert lookup_order.description == "Look an order up by its number."
    assert lookup_order.parameters == {
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "The order number"},
                       "verbose": {"type": "boolean", "default": False}},
        "required": ["order_id"], "additionalProperties": False}
    assert lookup_order("7") == {"order_id": "7", "status": "shipped", "verbose": False}


@pytest.mark.parametrize("stream", [False, True])
async def test_the_model_calls_a_tool_reads_its_result_and_answers(
        llm: Serve, stream: bool) -> None:
    model = llm(reply(None, call("c1", "lookup_order", order_id="42"), tokens=3),
                  reply("Order 42 has shipped.", tokens=5))
    bot = agent(lookup_order)
    session = bot.create_session()
    if stream:
        updates = [u async for u in bot.run("where is 42?", session=session, stream=True)]
        response = AgentResponse.from_updates(updates)
        assert [m.role for m in response.messages] == ["assistant", "tool", "assistant"]
    else:
        response = await bot.run("where is 42?", session=session)
        assert len(response.messages) == 1
    assert response.text == "Order 42 has shipped."
    assert response.usage == UsageDetails(8, 8, 16)
    assert model.tool_names(0) == ["lookup_order"]
    sent_back = model.requests[1]["messages"]
    assert sent_back[-1] == {"role": "tool", "tool_call_id": "c1", "content": (
        '{"order_id":"42","status":"shipped","verbose":false}')}
    history = session.state["messages"]
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert "tool_loop" not in session.state  # nothing of the loop outlives the turn


async def test_parallel_calls_run_concurrently_and_return_in_call_order(
        llm: Serve) -> None:
    both = threading.Barrier(2, timeout=30)  # each call waits for the other: only together

    @tool
    def slow(name: str) -> str:
        """Wait for the other call."""
        both.wait()
        return f"done {name}"

    model = llm(reply(None, call("a", "slow", name="a"), call("b", "slow", name="b")),
                  reply("both done"))
    response = await agent(slow).run("go")
    assert response.text == "both done"
    results = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert [(r["tool_call_id"], r["content"]) for r in results] == [
        ("a", "done a"), ("b", "done b")]


async def test_bad_arguments_are_fed_back_to_the_model_which_calls_again(
        llm: Serve) -> None:
    ran: list[str] = []

    @tool
    def refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        ran.append(order_id)
        return "refunded"

    model = llm(reply(None, call("c1", "refund", order_id="42", amount="lots")),
                  reply(None, call("c2", "refund", order_id="42", amount=5, extra=1)),
                  reply(None, call("c3", "refund", order_id="42", amount=5)),
                  reply("Refunded."))
    assert (await agent(refund).run("refund 42")).text == "Refunded."
    assert ran == ["42"]
    first = model.requests[1]["messages"][-1]["content"]
    assert "invalid arguments for tool 'refund'" in first and "$.amount" in first
    assert "extra" in model.requests[2]["messages"][-1]["content"]


async def test_an_unknown_tool_and_a_failing_tool_are_told_to_the_model(
        llm: Serve) -> None:
    @tool
    async def broken() -> str:
        """Always fails."""
        raise RuntimeError("database down")

    model = llm(reply(None, call("c1", "nope"), call("c2", "broken")), reply("Sorry."))
    assert (await agent(broken).run("try")).text == "Sorry."
    unknown, failed = [m["content"] for m in model.requests[1]["messages"][-2:]]
    assert "no tool named 'nope'" in unknown and "broken" in unknown
    assert "RuntimeError: database down" in failed


async def test_a_model_that_never_stops_gets_a_last_call_without_tools_then_fails(
        llm: Serve) -> None:
    calls = [reply(None, call(f"c{i}", "lookup_order", order_id=str(i))) for i in range(3)]
    model = llm(*calls, reply(None, call("c9", "lookup_order", order_id="9")))
    bot = agent(lookup_order, max_tool_rounds=2)
    session = bot.create_session()
    with pytest.raises(MaxToolRoundsError, match="max_tool_rounds=2") as caught:
        await bot.run("loop", session=session)
    assert caught.value.tool_names == ["lookup_order"]
    assert [r.get("tool_choice") for r in model.requests] == [None, None, "none"]


async def test_after_the_last_round_the_model_answers_without_tools(
        llm: Serve) -> None:
    llm(reply(None, call("c1", "lookup_order", order_id="1")), reply("Enough."))
    assert (await agent(lookup_order, max_tool_rounds=1).run("go")).text == "Enough."


async def test_a_tool_gets_its_call_id_through_tool_context(llm: Serve) -> None:
    seen: list[ToolContext] = []

    @tool
    def charge(amount: int, context: ToolContext) -> str:
        """Charge once per call id."""
        seen.append(context)
        return "ok"

    assert "context" not in charge.parameters["properties"]
    llm(reply(None, call("call-7", "charge", amount=3)), reply("charged"))
    await agent(charge).run("charge 3")
    assert seen == [ToolContext("call-7", "charge")]


async def test_definitions_alone_still_end_the_run_with_the_calls(
        llm: Serve) -> None:
    model = llm(reply(None, call("w1", "get_weather")), reply("Sunny."))
    bot = agent(WEATHER_DEFINITION)
    session = bot.create_session()
    first = await bot.run("weather?", session=session)
    assert first.function_calls == [FunctionCallContent("w1", "get_weather", {})]
    second = await bot.run(ChatMessage("tool", [FunctionResultContent("w1", "sunny")]),
                           session=session)
    assert second.text == "Sunny."
    assert model.requests[1]["messages"][-1]["tool_call_id"] == "w1"


async def test_a_pydantic_model_parameter_is_described_and_validated(
        llm: Serve) -> None:
    @tool
    def ship(to: Address) -> str:
        """Ship somewhere."""
        return f"{to.city} {to.zip}"

    assert ship.parameters["properties"]["to"]["properties"]["zip"] == {
        "title": "Zip", "type": "integer"}
    model = llm(reply(None, call("c1", "ship", to={"city": "Oslo", "zip": "x"})),
                  reply(None, call("c2", "ship", to={"city": "Oslo", "zip": 150})), reply("ok"))
    await agent(ship).run("ship")
    assert "zip" in model.requests[1]["messages"][-1]["content"]
    assert model.requests[2]["messages"][-1]["content"] == "Oslo 150"


def test_tools_are_refused_when_they_cannot_be_described() -> None:
    def spread(*args: int) -> None:
        """Takes anything."""

    with pytest.raises(TypeError, match=r"\*args"):
        tool(spread)
    with pytest.raises(ValueError, match="a tool name is 1-64 letters"):
        tool(lambda: None)
    with pytest.raises(ValueError, match="two tools are named 'lookup_order'"):
        agent(lookup_order, lookup_order)
    with pytest.raises(ValueError, match="approval must be"):
        tool(approval="sometimes")(spread)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tool_rounds"):
        agent(max_tool_rounds=0)


def test_sync_tools_run_off_the_event_loop() -> None:
    loops: list[bool] = []

    @tool
    def where() -> str:
        """Report the thread."""
        try:
            asyncio.get_running_loop()
            loops.append(True)
        except RuntimeError:
            loops.append(False)
        return "x"

    asyncio.run(where.invoke({}, "c"))
    assert loops == [False]


@tool(approval="always")
def wipe(disk: str) -> str:
    """Wipe a disk."""
    return f"wiped {disk}"


async def test_an_agent_run_directly_asks_and_takes_an_approval_as_a_function_result(
        llm: Serve) -> None:
    model = llm(reply(None, call("w1", "wipe", disk="d")), reply("Not wiped."),
                  reply(None, call("w2", "wipe", disk="e")), reply("Wiped e."))
    bot = agent(wipe)
    session = bot.create_session()
    asked = await bot.run("wipe d", session=session)
    (request,) = asked.user_input_requests
    assert request.request_id == "w1" and request.data.arguments == {"disk": "d"}
    before = dict(session.state)
    with pytest.raises(ToolArgumentsError, match="must be a ToolApproval"):
        await bot.run(ChatMessage("tool", [FunctionResultContent("w1", {"ok": 1})]),
                      session=session)
    assert session.state == before  # refused before anything changed: asked still
    denied = await bot.run(ChatMessage("tool", [FunctionResultContent("w1", {
        "approved": False})]), session=session)
    assert denied.text == "Not wiped." and "denied" in model.requests[1]["messages"][-1][
        "content"]
    await bot.run("wipe e", session=session)
    done = await bot.run(ChatMessage("tool", [FunctionResultContent("w2", True)]),
                         session=session)
    assert done.text == "Wiped e." and model.requests[3]["messages"][-1]["content"] == "wiped e"
