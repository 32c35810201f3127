"""A hosted support agent: a read-only order lookup tool, and a refund tool that needs approval.

Run it: ``python samples/support.py`` plays one conversation in memory (a refund asked,
approved, done; another asked and denied) and writes nothing, so every run starts afresh.
Served, a conversation lives in the server's storage and continues across restarts. Serve
it over every protocol at once::

    python -m checkflow serve samples.support:workflow --adapters native,a2a,agui,foundry

then ask for a refund (``curl`` on the native API; docs/tools.md shows each protocol)::

    curl -s localhost:8000/v1/conversations/c1/runs -H 'content-type: application/json' \\
         -d '{"message": "Please refund order 1001"}'

The agent looks the order up (a tool that runs at once), then asks to refund it: the run
pauses with a ``ToolApprovalRequest`` (tool name, call id, arguments) in the checkpoint, to
be answered over any protocol, in any process, with ``{"approved": true}``, a denial with a
``reason`` (the agent is told), or edited ``arguments`` (validated again). An approved refund
runs once: it is recorded in the ledger (``CHECKFLOW_SUPPORT_LEDGER``, a JSON-lines file, when
set) under its call id, so even a refund cut short by a crash and run again is paid once.

With ``OPENAI_API_KEY`` set the agent is an ``OpenAIChatAgent`` (``OPENAI_MODEL``, default
``gpt-4o-mini``; ``OPENAI_BASE_URL`` for a compatible endpoint). Without, ``DeskModel`` plays
the model: a few rules over the conversation, so the sample runs offline and the same way
every time. It also calls a tool the client declared (AG-UI ``tools``, Responses function
tools) when the message names it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from checkflow.agents import (
    AgentExecutor,
    AgentResponseUpdate,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    ModelReply,
    TextContent,
    ToolApprovalRequest,
    ToolCallingAgent,
    ToolContext,
    tool,
    tool_request,
)
from checkflow.workflows import Workflow, WorkflowBuilder

ORDERS: dict[str, dict[str, Any]] = {
    "1001": {"item": "kettle", "paid": 40.0, "status": "delivered"},
    "1002": {"item": "toaster", "paid": 25.5, "status": "shipped"},
}

INSTRUCTIONS = ("You are a support agent. Look orders up before you act on them; refund only "
                "what was paid, and say plainly what you did.")


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its number: item, amount paid, delivery status."""
    order = ORDERS.get(order_id)
    return {"order_id": order_id, "found": False} if order is None else {
        "order_id": order_id, "found": True, **order}


@tool(approval="always")
def refund(order_id: str, amount: float, context: ToolContext) -> dict[str, Any]:
    """Refund an amount on an order (a person approves every refund first)."""
    ledger = os.environ.get("CHECKFLOW_SUPPORT_LEDGER")
    if ledger:
        with open(ledger, "a+", encoding="utf-8") as file:
            file.seek(0)
            if any(json.loads(line)["call_id"] == context.call_id for line in file if line):
                return {"order_id": order_id, "refunded": amount, "note": "already paid"}
            file.write(json.dumps({"call_id": context.call_id, "order_id": order_id,
                                   "amount": amount}) + "\n")
            file.flush()
            os.fsync(file.fileno())
    return {"order_id": order_id, "refunded": amount}


class DeskModel(ToolCallingAgent):
    """A stand-in for a language model: rules over the conversation, no network."""

    async def _complete(self, history: Sequence[ChatMessage], tools: list[dict[str, Any]],
                        tool_choice: str | None, stream: bool
                        ) -> AsyncIterator[AgentResponseUpdate | ModelReply]:
        offered = {t["function"]["name"]: t["function"] for t in tools}
        calls = [] if tool_choice == "none" else _next_calls(history, offered)
        text = "" if calls else _answer(history)
        if stream and text:
            for word in re.findall(r"\S+\s*", text):
                yield AgentResponseUpdate((TextContent(word),), "assistant", self.name)
        contents = [*([TextContent(text)] if text else []), *calls]
        if stream and calls:
            yield AgentResponseUpdate(tuple(calls), "assistant", self.name)
        yield ModelReply(ChatMessage("assistant", contents))


def _user_text(history: Sequence[ChatMessage]) -> str:
    return next((m.text for m in reversed(history) if m.role == "user"), "")


def _results(history: Sequence[ChatMessage]) -> dict[str, Any]:
    """The results of the latest tool round, by the called tool's name."""
    last = history[-1] if history else None
    if last is None or last.role != "tool":
        return {}
    names = {c.call_id: c.name for m in history for c in m.contents
             if isinstance(c, FunctionCallContent)}
    return {names.get(r.call_id, ""): r.result for r in last.contents
            if isinstance(r, FunctionResultContent)}


def _next_calls(history: Sequence[ChatMessage], offered: dict[str, Any]
                ) -> list[FunctionCallContent]:
    text, results = _user_text(history), _results(history)
    turn = sum(1 for m in history if m.role == "tool")
    order = re.search(r"\b(\d{4})\b", text)
    if not results:
        for name, spec in offered.items():  # a tool the client declared, named in the text
            if name not in ("lookup_order", "refund") and name in text:
                return [FunctionCallContent(f"call_{turn}_{name}", name,
                                            _fill(spec.get("parameters", {}), text))]
        if order and "lookup_order" in offered:
            return [FunctionCallContent(f"call_{turn}_lookup", "lookup_order",
                                        {"order_id": order.group(1)})]
        return []
    found = results.get("lookup_order")
    if isinstance(found, dict) and found.get("found") and "refund" in text.lower() \
            and "refund" in offered:
        return [FunctionCallContent(f"call_{turn}_refund", "refund",
                                    {"order_id": found["order_id"], "amount": found["paid"]})]
    return []


def _fill(parameters: dict[str, Any], text: str) -> dict[str, Any]:
    """Arguments for a client's tool: its required string parameters get the user's text."""
    properties = parameters.get("properties", {})
    return {name: text for name in parameters.get("required", ())
            if properties.get(name, {}).get("type", "string") == "string"}


def _answer(history: Sequence[ChatMessage]) -> str:
    results = _results(history)
    if "refund" in results:
        done = results["refund"]
        if isinstance(done, dict):
            return f"Refunded {done['refunded']:.2f} on order {done['order_id']}."
        return f"I did not refund it. ({done})"
    found = results.get("lookup_order")
    if isinstance(found, dict):
        if not found.get("found"):
            return f"I could not find order {found['order_id']}."
        return (f"Order {found['order_id']} ({found['item']}, {found['paid']:.2f} paid) is "
                f"{found['status']}.")
    if results:
        name, value = next(iter(results.items()))
        return f"Your {name} said: {value}"
    return "I can look an order up or refund it: tell me its four-digit number."


def make_agent() -> ToolCallingAgent:
    """``OpenAIChatAgent`` when ``OPENAI_API_KEY`` is set, else the offline ``DeskModel``."""
    if os.environ.get("OPENAI_API_KEY"):
        from checkflow.agents import OpenAIChatAgent

        return OpenAIChatAgent(os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), name="support",
                               instructions=INSTRUCTIONS, tools=[lookup_order, refund])
    return DeskModel("support", tools=[lookup_order, refund])


def build(agent: ToolCallingAgent) -> Workflow:
    """The support workflow: one streaming agent whose replies are the outputs."""
    return WorkflowBuilder(AgentExecutor(agent, output_response=True, stream=True),
                           name="support").build()


workflow = build(make_agent())


async def main() -> None:
    checkpoint = workflow.create_checkpoint()
    for message, answer in (("Please refund order 1001", {"approved": True}),
                            ("Please refund order 1002", {"approved": False,
                                                          "reason": "bought in a sale"})):
        paused = await workflow.run(message, checkpoint=checkpoint)
        for call_id, pending in paused.pending_requests.items():
            asked = tool_request(pending.data)
            assert isinstance(asked, ToolApprovalRequest)
            print(f"asks to {asked.tool_name} {json.dumps(asked.arguments, sort_keys=True)}:",
                  answer)
            done = await workflow.run(responses={call_id: answer}, checkpoint=checkpoint)
            print("says:", " ".join(o.text for o in done.get_outputs()))


if __name__ == "__main__":
    asyncio.run(main())
