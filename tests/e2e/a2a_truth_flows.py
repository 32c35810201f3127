"""The workflows the A2A truth tests serve (issue 27), one behaviour per input word.

Gates and counters are files in ``$CHECKFLOW_E2E_GATES``, shared with the test process:

- ``hold:<name>`` writes ``<name>.entered``, waits for ``<name>.release``, then a second
  superstep yields ``"released"`` (a cancel lands on that boundary);
- ``ask:<name>`` pauses for a bool; the answer waits on the gate ``<name>`` when
  ``<name>.hold`` exists (to hold a continuation), then yields ``published``/``dropped``;
  ``ask2:<name>`` pauses twice;
- ``spin:<name>`` runs up to ``SPINS`` short supersteps, writing the last one's number to
  ``<name>.ticks`` (a cancel has a boundary to land on every 50 ms), then yields ``"spun"``;
- anything else is echoed.

Every handler run appends one line to ``runs-<word>`` (the answer: ``runs-answer-<name>``),
so a test counts how often a handler really ran, across restarts too. ``whole`` is the same
with a start executor that takes the whole ``A2AMessage``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from checkflow.adapters.a2a import A2AMessage
from checkflow.workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

SPINS = 300


def _folder() -> Path:
    return Path(os.environ["CHECKFLOW_E2E_GATES"])


def _count(name: str) -> None:
    with (_folder() / f"runs-{name}").open("a") as runs:
        runs.write("ran\n")


async def _gate(name: str) -> None:
    folder = _folder()
    (folder / f"{name}.entered").write_text("entered")
    while not (folder / f"{name}.release").exists():  # opened by the test, polled here
        await asyncio.sleep(0.005)


async def _start(text: str, ctx: WorkflowContext) -> None:
    _count(text)
    word, _, name = text.partition(":")
    if word in ("ask", "ask2"):
        ctx.executor_state["asks"] = 2 if word == "ask2" else 1
        ctx.executor_state["name"] = name
        await ctx.request_info({"question": "publish?"}, response_type=bool)
    elif word == "hold":
        await _gate(name)
        await ctx.send_message("released")
    elif word == "spin":
        await ctx.send_message({"spin": name, "tick": 0})
    else:
        await ctx.yield_output(f"echo: {text}")


class Start(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        await _start(text, ctx)

    @response_handler
    async def answered(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        name = str(ctx.executor_state.get("name", ""))
        _count(f"answer-{name}")
        if (_folder() / f"{name}.hold").exists():
            await _gate(name)
        ctx.executor_state["asks"] = int(ctx.executor_state.get("asks", 1)) - 1
        if ctx.executor_state["asks"] > 0:
            await ctx.request_info({"question": "really publish?"}, response_type=bool)
        else:
            await ctx.yield_output("published" if approved else "dropped")


class WholeStart(Start):
    """The same words, for a start executor that takes the whole ``A2AMessage``."""

    @handler
    async def whole(self, message: A2AMessage, ctx: WorkflowContext) -> None:
        await _start(message.text(), ctx)


class Spin(Executor):
    @handler
    async def spin(self, tick: dict[str, Any], ctx: WorkflowContext) -> None:
        name, number = str(tick["spin"]), int(tick["tick"])
        (_folder() / f"{name}.ticks").write_text(str(number))
        await asyncio.sleep(0.05)  # pacing only: each tick is one superstep boundary
        if number < SPINS:
            await ctx.send_message({"spin": name, "tick": number + 1})
        else:
            await ctx.yield_output("spun")


class Finish(Executor):
    @handler
    async def finish(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(text)


def _build(start: Executor, name: str) -> Any:
    spin, finish = Spin("spin"), Finish("finish")
    return (WorkflowBuilder(start_executor=start, name=name, max_iterations=SPINS + 10)
            .add_edge(start, finish).add_edge(start, spin).add_edge(spin, spin).build())


workflow = _build(Start("start"), "a2a-truth")
whole = _build(WholeStart("start"), "a2a-truth-whole")
