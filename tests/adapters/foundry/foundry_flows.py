"""Workflows the Foundry end-to-end servers serve (``python -m checkflow serve``).

One workflow, chosen by its message:

- ``ask:<topic>`` asks a yes/no question and then yields ``published: <topic>`` or
  ``dropped: <topic>``;
- ``pair:<topic>`` asks two questions at once (a yes/no one and a free-text ``note``) and yields
  once both are answered;
- ``hold:<name>`` holds the run on a marker-file gate shared with the test (the executor writes
  ``<name>.entered`` in ``$CHECKFLOW_E2E_GATES`` and waits for ``<name>.release``);
- ``steps:<name>`` yields ``one``, then holds on gate ``<name>``, then yields ``two``;
- ``fail`` raises in an executor;
- anything else is yielded upper-cased after two more supersteps.
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


async def _gate(name: str) -> None:
    folder = Path(os.environ["CHECKFLOW_E2E_GATES"])
    (folder / f"{name}.entered").write_text("entered")
    release = folder / f"{name}.release"
    for _ in range(12_000):  # a minute at most: the test opens it long before
        if release.exists():
            return
        await asyncio.sleep(0.005)
    raise TimeoutError(f"gate {name!r} was never released")


class Start(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        if text == "fail":
            raise RuntimeError("the start executor failed on purpose")
        if text.startswith("hold:"):
            await _gate(text.removeprefix("hold:"))
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
            topic = text.removeprefix("ask:")
            ctx.executor_state.update(topic=topic, waiting=1)
            await ctx.request_info({"question": f"publish {topic}?"}, response_type=bool)
        elif text.startswith("pair:"):
            ctx.executor_state.update(topic=text.removeprefix("pair:"), waiting=2)
            await ctx.request_info({"question": "publish?"}, response_type=bool)
            await ctx.request_info({"question": "a note?"}, response_type=str)
        elif text.startswith("steps:"):
            await ctx.yield_output("two")
        else:
            await ctx.yield_output(text.upper())

    @response_handler
    async def approved(self, request: dict, answer: bool, ctx: WorkflowContext) -> None:
        ctx.executor_state["answer"] = answer
        await self._maybe_done(ctx)

    @response_handler
    async def noted(self, request: dict, note: str, ctx: WorkflowContext) -> None:
        ctx.executor_state["note"] = note
        await self._maybe_done(ctx)

    async def _maybe_done(self, ctx: WorkflowContext) -> None:
        state = ctx.executor_state
        state["waiting"] -= 1
        if state["waiting"]:
            return
        verdict = "published" if state.get("answer") else "dropped"
        note = f" ({state['note']})" if "note" in state else ""
        await ctx.yield_output(f"{verdict}: {state.get('topic', '')}{note}")


_start, _middle, _finish = Start("start"), Middle("middle"), Finish("finish")
workflow = WorkflowBuilder(start_executor=_start, name="foundry-e2e").add_chain(
    [_start, _middle, _finish]).build()
