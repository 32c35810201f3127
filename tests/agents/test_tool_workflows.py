"""Tool loops inside workflows: each step committed, approvals and client tools as requests,
answered after a reload, a tool never run twice once its result is committed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checkflow.agents import (
    CLIENT_TOOLS_KEY,
    AgentExecutor,
    AgentResponse,
    AgentRunUpdateEvent,
    ClientTool,
    ClientToolCall,
    ConcurrentBuilder,
    OpenAIChatAgent,
    SequentialBuilder,
    ToolApproval,
    ToolApprovalRequest,
    ToolContext,
    tool,
    tool_request,
)
from checkflow.errors import InvalidResponseError
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import RunStatus, Workflow, WorkflowBuilder
from tests.llm_script import BASE_URL, Serve, call, reply

REFUNDS: list[tuple[str, int, str]] = []  # (order, amount, call id) per refund that ran


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order_id": order_id, "paid": 30}


@tool(approval="always")
def refund(order_id: str, amount: int, context: ToolContext) -> str:
    """Refund part of an order."""
    REFUNDS.append((order_id, amount, context.call_id))
    return f"refunded {amount} on {order_id}"


@tool(approval=lambda args: args["amount"] > 100)
def credit(amount: int) -> str:
    """Give store credit; large amounts need approval."""
    return f"credited {amount}"


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    REFUNDS.clear()
    yield
    REFUNDS.clear()



def support(*, stream: bool = False) -> Workflow:
    agent = OpenAIChatAgent("m", name="support", base_url=BASE_URL, api_key="k",
                            tools=[lookup_order, refund, credit])
    return WorkflowBuilder(AgentExecutor(agent, output_response=True, stream=stream),
                           name="support").build()


def asked(result: Any) -> Any:
    (pending,) = result.pending_requests.values()
    return tool_request(pending.data)


REFUND_CALL = call("r1", "refund", order_id="42", amount=30)


async def test_an_approval_pauses_the_run_and_the_approved_tool_runs_once_after_a_reload(
        llm: Serve, tmp_path: Path) -> None:
    model = llm(reply(None, call("l1", "lookup_order", order_id="42")),
                  reply(None, REFUND_CALL), reply("Refunded 30."))
    storage = FileCheckpointStorage(tmp_path)
    checkpoint = support().create_checkpoint(checkpoint_storage=storage)
    paused = await support().run("refund order 42", checkpoint=checkpoint)
    assert paused.status is RunStatus.AWAITING_RESPONSES
    request = asked(paused)
    assert request == ToolApprovalRequest(tool_name="refund", call_id="r1",
                                          arguments={"order_id": "42", "amount": 30},
                                          description="Refund part of an order.")
    assert paused.pending_requests["r1"].response_type is ToolApproval
    assert REFUNDS == []

    reloaded = await FileCheckpointStorage(tmp_path).load(checkpoint.checkpoint_id)
    done = await support().run(responses={"r1": {"approved": True}}, checkpoint=reloaded)
    assert [o.text for o in done.get_outputs()] == ["Refunded 30."]
    assert REFUNDS == [("42", 30, "r1")]
    assert model.requests[2]["messages"][-1]["content"] == "refunded 30 on 42"
    again = await support().run(checkpoint=reloaded)  # a bare resume runs nothing again
    assert again.status is RunStatus.IDLE and REFUNDS == [("42", 30, "r1")]


async def test_a_denial_is_told_to_the_model_and_the_tool_never_runs(
        llm: Serve) -> None:
    model = llm(reply(None, REFUND_CALL), reply("I did not refund it."))
    workflow = support()
    checkpoint = workflow.create_checkpoint()
    await workflow.run("refund 42", checkpoint=checkpoint)
    done = await workflow.run(responses={"r1": ToolApproval(approved=False, reason="too late")},
                              checkpoint=checkpoint)
    assert [o.text for o in done.get_outputs()] == ["I did not refund it."]
    assert REFUNDS == []
    told = model.requests[1]["messages"][-1]["content"]
    assert "denied" in told and "too late" in told


async def test_edited_arguments_are_validated_again_and_a_bad_edit_commits_nothing(
        llm: Serve) -> None:
    llm(reply(None, REFUND_CALL), reply("Refunded 10."))
    workflow = support()
    checkpoint = workflow.create_checkpoint()
    await workflow.run("refund 42", checkpoint=checkpoint)
    head = checkpoint.head_snapshot_id
    with pytest.raises(InvalidResponseError, match=r"refund.*\$\.amount") as caught:
        await workflow.run(responses={"r1": {"approved": True, "arguments": {
            "order_id": "42", "amount": "ten"}}}, checkpoint=checkpoint)
    assert caught.value.request_id == "r1"
    assert checkpoint.head_snapshot_id == head and REFUNDS == []
    with pytest.raises(InvalidResponseError, match="ToolApproval"):
        await workflow.run(responses={"r1": "yes"}, checkpoint=checkpoint)
    assert checkpoint.head_snapshot_id == head
    await workflow.run(responses={"r1": {"approved": True, "arguments": {
        "order_id": "42", "amount": 10}}}, checkpoint=checkpoint)
    assert REFUNDS == [("42", 10, "r1")]


async def test_an_approval_predicate_asks_only_when_it_says_so(llm: Serve) -> None:
    llm(reply(None, call("c1", "credit", amount=20), call("c2", "credit", amount=500)),
          reply("Credited 20 and 500."))
    workflow = support()
    checkpoint = workflow.create_checkpoint()
    paused = await workflow.run("credit", checkpoint=checkpoint)
    assert list(paused.pending_requests) == ["c2"]
    session = checkpoint.head_snapshot.state["executor_states"]["support"]["session"]
    assert session.state["tool_loop"]["results"] == {"c1": "credited 20"}  # ran, committed
    done = await workflow.run(responses={"c2": {"approved": True}}, checkpoint=checkpoint)
    assert [o.text for o in done.get_outputs()] == ["Credited 20 and 500."]


async def test_each_step_is_a_snapshot_calls_before_they_run_results_before_the_model(
        llm: Serve) -> None:
    llm(reply(None, call("l1", "lookup_order", order_id="7")), reply("Paid 30."))
    workflow = support()
    checkpoint = workflow.create_checkpoint()
    await workflow.run("what did 7 cost?", checkpoint=checkpoint)
    loops = [s.state["executor_states"].get("support", {}).get("session")
             for s in checkpoint.snapshots]
    states = [None if s is None else s.state.get("tool_loop") for s in loops]
    recorded = [s for s in states if s and s["calls"] and not s["results"]]
    assert len(recorded) == 1, states  # the call committed before it ran
    assert [c.call_id for c in recorded[0]["calls"]] == ["l1"]


async def test_a_run_cut_short_while_a_tool_runs_reruns_that_call_under_the_same_id(
        llm: Serve) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    seen: list[str] = []

    @tool
    async def ship(order_id: str, context: ToolContext) -> str:
        """Ship an order."""
        seen.append(context.call_id)
        if len(seen) == 1:
            entered.set()
            await release.wait()  # cancelled here: the first attempt never finishes
        return "shipped"

    model = llm(reply(None, call("s1", "ship", order_id="9")), reply("Shipped."))
    agent = OpenAIChatAgent("m", name="support", base_url=BASE_URL, api_key="k", tools=[ship])
    workflow = WorkflowBuilder(AgentExecutor(agent, output_response=True)).build()
    checkpoint = workflow.create_checkpoint()
    task = asyncio.create_task(workflow.run("ship 9", checkpoint=checkpoint))
    await asyncio.wait_for(entered.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    done = await workflow.run(checkpoint=checkpoint)  # resume from the last commit
    assert [o.text for o in done.get_outputs()] == ["Shipped."]
    assert seen == ["s1", "s1"]  # at least once: the cut call ran again, same id
    assert len(model.requests) == 2  # the model was not asked again for the call


async def test_a_client_tool_pauses_with_the_call_and_takes_its_result(
        llm: Serve) -> None:
    model = llm(reply(None, call("k1", "show_map", city="Oslo")), reply("Shown."))
    workflow = support()
    checkpoint = workflow.create_checkpoint()
    paused = await workflow.run("show Oslo", checkpoint=checkpoint, shared_state={
        CLIENT_TOOLS_KEY: [ClientTool(name="show_map", description="Show a map",
                                      parameters={"type": "object"})]})
    assert "show_map" in model.tool_names(0) and "refund" in model.tool_names(0)
    assert asked(paused) == ClientToolCall(tool_name="show_map", call_id="k1",
                                           arguments={"city": "Oslo"})
    done = await workflow.run(responses={"k1": "map shown"}, checkpoint=checkpoint)
    assert [o.text for o in done.get_outputs()] == ["Shown."]
    assert model.requests[1]["messages"][-1] == {
        "role": "tool", "tool_call_id": "k1", "content": "map shown"}


async def test_streaming_emits_the_calls_and_their_results(llm: Serve) -> None:
    llm(reply(None, call("l1", "lookup_order", order_id="1")), reply("Paid."))
    result = await support(stream=True).run("cost of 1?")
    updates = [e.update for e in result.events if isinstance(e, AgentRunUpdateEvent)]
    merged = AgentResponse.from_updates(updates)
    assert [m.role for m in merged.messages] == ["assistant", "tool", "assistant"]
    assert merged.messages[1].contents[0].result == {"order_id": "1", "paid": 30}


async def test_a_sequential_participant_with_tools_pauses_and_resumes(
        llm: Serve) -> None:
    model = llm(reply(None, REFUND_CALL), reply("Refund done."))
    agent = OpenAIChatAgent("m", name="support", base_url=BASE_URL, api_key="k",
                            tools=[refund])
    workflow = SequentialBuilder([agent]).build()
    checkpoint = workflow.create_checkpoint()
    paused = await workflow.run("refund 42", checkpoint=checkpoint)
    assert isinstance(asked(paused), ToolApprovalRequest)
    done = await workflow.run(responses={"r1": {"approved": True}}, checkpoint=checkpoint)
    (conversation,) = done.get_outputs()
    assert [m.text for m in conversation] == ["refund 42", "Refund done."]
    assert REFUNDS == [("42", 30, "r1")] and len(model.requests) == 2


async def test_concurrent_participants_with_tools_pause_and_the_fan_in_waits(
        llm: Serve) -> None:
    def script(messages: list[dict[str, Any]]) -> dict[str, Any]:
        who, last = messages[0]["content"], messages[-1]
        if last["role"] == "tool":
            return reply(f"{who}: {last['content']}")
        if who == "refunds":
            return reply(None, REFUND_CALL)
        return reply(None, call("l1", "lookup_order", order_id="42"))

    llm(script)
    agents = [OpenAIChatAgent("m", name=name, base_url=BASE_URL, api_key="k",
                              instructions=name, tools=[lookup_order, refund])
              for name in ("refunds", "lookups")]
    workflow = ConcurrentBuilder(agents).build()
    checkpoint = workflow.create_checkpoint()
    paused = await workflow.run("order 42", checkpoint=checkpoint)
    assert list(paused.pending_requests) == ["r1"] and paused.get_outputs() == []
    done = await workflow.run(responses={"r1": {"approved": True}}, checkpoint=checkpoint)
    (replies,) = done.get_outputs()
    assert [r.text for r in replies] == [
        "refunds: refunded 30 on 42", 'lookups: {"order_id":"42","paid":30}']
