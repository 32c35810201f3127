"""The v2 workflows equivalent to the v1 fixtures' (tests/fixtures/v1/generate.py), and the
fixture folder with ``legacy_types`` importable. Importing this module registers
``legacy_types.Ticket`` with the state codec, as an application migrating its data would."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from checkflow.state import register_state_type
from checkflow.workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "v1"
if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))

from legacy_types import Ticket  # noqa: E402  (importable only from the fixture folder)

register_state_type(Ticket, type_id="legacy_types.Ticket")


class Writer(Executor):
    @handler
    async def write(self, topic: str, ctx: WorkflowContext[str]) -> None:
        ctx.set_state("topic", topic)
        await ctx.send_message(f"Five things to know about {topic}.")


class Reviewer(Executor):
    @handler
    async def review(self, draft: str, ctx: WorkflowContext) -> None:
        ctx.executor_state["reviewed"] = ctx.executor_state.get("reviewed", 0) + 1
        await ctx.request_info({"question": "Publish this draft?", "draft": draft},
                               response_type=bool, request_id="approve-1")

    @response_handler
    async def decide(self, request: dict[str, Any], approved: bool,
                     ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(f"published: {request['draft']}" if approved else "dropped")


def build_approval() -> Any:
    writer, reviewer = Writer("writer"), Reviewer("reviewer")
    return WorkflowBuilder(writer, name="approval").add_edge(writer, reviewer).build()


approval = build_approval()
