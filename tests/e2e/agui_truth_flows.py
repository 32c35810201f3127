"""The workflow the AG-UI source-of-truth tests serve (``serve agui_truth_flows:review``).

``review``: a topic is drafted (superstep 1: a text output ``draft: <topic>``, so a committed
snapshot holds text before the turn ends), then reviewed (superstep 2: a ``{"question",
"draft"}`` request answered with a bool, then ``published: <topic>`` or ``dropped``).
A topic holding ``hold:<name>`` holds the reviewer on a marker-file gate shared with the test
(``$CHECKFLOW_E2E_GATES``) before it asks; a gate released before it is reached does not hold.
Every handler run appends one line to ``runs.log`` in the gate folder, so a test counts how
often each handler really ran (a replayed or attached turn must add none).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from checkflow.workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

__all__ = ["review"]


def _folder() -> Path:
    return Path(os.environ["CHECKFLOW_E2E_GATES"])


def _count(line: str) -> None:
    with (_folder() / "runs.log").open("a", encoding="utf-8") as log:
        log.write(line + "\n")
        log.flush()


async def _gate(name: str) -> None:
    (_folder() / f"{name}.entered").write_text("entered")
    release = _folder() / f"{name}.release"
    for _ in range(12_000):  # at most a minute: the test opens the gate, kills, or gives up
        if release.exists():
            return
        await asyncio.sleep(0.005)
    raise TimeoutError(f"gate {name!r} was never released")


def _held(topic: str) -> str | None:
    for word in topic.split():
        if word.startswith("hold:"):
            return word.removeprefix("hold:")
    return None


class Drafter(Executor):
    @handler
    async def draft(self, topic: str, ctx: WorkflowContext[str]) -> None:
        _count(f"draft:{topic}")
        await ctx.yield_output(f"draft: {topic}")
        await ctx.send_message(topic)


class Reviewer(Executor):
    @handler
    async def review(self, topic: str, ctx: WorkflowContext) -> None:
        _count(f"review:{topic}")
        gate = _held(topic)
        if gate is not None:
            await _gate(gate)
        ctx.executor_state["topic"] = topic
        await ctx.request_info({"question": "Publish this draft?", "draft": topic},
                               response_type=bool)

    @response_handler
    async def decide(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        topic = ctx.executor_state.pop("topic", "")
        _count(f"decide:{topic}")
        await ctx.yield_output(f"published: {topic}" if approved else "dropped")


_drafter, _reviewer = Drafter("drafter"), Reviewer("reviewer")
review = WorkflowBuilder(start_executor=_drafter, name="agui-truth").add_edge(
    _drafter, _reviewer).build()
