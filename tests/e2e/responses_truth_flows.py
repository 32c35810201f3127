"""The workflow the Responses truth tests serve (``python -m checkflow serve``).

Chosen by its message; every ``<name>`` is a marker-file gate in ``$CHECKFLOW_E2E_GATES``:

- ``hold:<name>``: the start handler appends a line to ``<name>.runs`` (so a test counts how
  often it ran), then holds on gate ``<name>`` (writes ``<name>.entered``, waits for
  ``<name>.release``), and the run yields ``HOLD:<NAME>``;
- ``ask:<name>``: asks a yes/no question; its answer's handler appends to ``<name>.runs``,
  holds on gate ``<name>`` and yields ``published: <name>`` or ``dropped: <name>``;
- ``steps:<name>``: yields ``one``, holds on gate ``<name>`` in the next superstep, then
  yields ``two``;
- anything else is yielded upper-cased.

A gate whose run is cancelled writes ``<name>.cancelled``, so a test sees the run stop where it
was held; a gate never released gives up after a minute.
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


def _folder() -> Path:
    return Path(os.environ["CHECKFLOW_E2E_GATES"])


def _count(name: str) -> None:
    with (_folder() / f"{name}.runs").open("a") as runs:
        runs.write("ran\n")


async def _gate(name: str) -> None:
    folder = _folder()
    (folder / f"{name}.entered").write_text("entered")
    release = folder / f"{name}.release"
    try:
        for _ in range(12_000):  # a minute at most: the test opens it long before
            if release.exists():
                return
            await asyncio.sleep(0.005)
    except asyncio.CancelledError:
        (folder / f"{name}.cancelled").write_text("cancelled")
        raise
    raise TimeoutError(f"gate {name!r} was never released")


class Start(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        if text.startswith("hold:"):
            name = text.removeprefix("hold:")
            _count(name)
            await _gate(name)
        if text.startswith("steps:"):
            await ctx.yield_output("one")
        await ctx.send_message(text)


class Middle(Executor):
    @handler
    async def middle(self, text: str, ctx: WorkflowContext) -> None:
        if text.startswith("steps:"):
            await _gate(text.removeprefix("steps:"))
        await ctx.send_message(text)


class Finish(Executor):
    @handler
    async def finish(self, text: str, ctx: WorkflowContext) -> None:
        if text.startswith("ask:"):
            ctx.executor_state["name"] = text.removeprefix("ask:")
            await ctx.request_info({"question": f"publish {text[4:]}?"}, response_type=bool)
        elif text.startswith("steps:"):
            await ctx.yield_output("two")
        else:
            await ctx.yield_output(text.upper())

    @response_handler
    async def answered(self, request: dict, answer: bool, ctx: WorkflowContext) -> None:
        name = str(ctx.executor_state.get("name", ""))
        _count(name)
        await _gate(name)
        await ctx.yield_output(f"{'published' if answer else 'dropped'}: {name}")


_start, _middle, _finish = Start("start"), Middle("middle"), Finish("finish")
workflow = WorkflowBuilder(start_executor=_start, name="responses-truth").add_chain(
    [_start, _middle, _finish]).build()
