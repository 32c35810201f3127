"""Workflows the end-to-end servers serve (imported by ``python -m checkflow serve``).

``hold:<name>`` holds the run on a marker-file gate shared with the test process: the start
executor writes ``<name>.entered`` in ``$CHECKFLOW_E2E_GATES`` and waits until the test
creates ``<name>.release``. Anything else runs three supersteps and yields it upper-cased.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from checkflow.workflows import Executor, WorkflowBuilder, WorkflowContext, handler


async def _gate(name: str) -> None:
    folder = Path(os.environ["CHECKFLOW_E2E_GATES"])
    (folder / f"{name}.entered").write_text("entered")
    release = folder / f"{name}.release"
    while not release.exists():  # the gate: opened by the test, polled here
        await asyncio.sleep(0.005)


class Start(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext) -> None:
        if text.startswith("hold:"):
            await _gate(text.removeprefix("hold:"))
        await ctx.send_message(text)


class Shout(Executor):
    @handler
    async def shout(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.send_message(text.upper())


class Finish(Executor):
    @handler
    async def finish(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(text)


_start, _shout, _finish = Start("start"), Shout("shout"), Finish("finish")
workflow = WorkflowBuilder(start_executor=_start, name="e2e").add_chain(
    [_start, _shout, _finish]).build()


def authenticate(request: Any) -> str | None:
    """``--authenticate e2e_flows:authenticate``: the bearer token is the principal."""
    token = str(request.headers.get("authorization", ""))
    return token.removeprefix("Bearer ") or None
