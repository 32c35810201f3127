"""Workflows the AG-UI end-to-end servers serve (``python -m checkflow serve agui_flows:X``).

- ``approval``: a topic becomes a draft, a reviewer asks ``{"question": ...}`` (a bool answer)
  and publishes or drops it. ``fail:<text>`` makes the writer raise; ``hold:<name>`` holds the
  writer on a marker-file gate shared with the test (``$CHECKFLOW_E2E_GATES``).
- ``two_requests``: two reviewers each ask for a number (or take ``RequestCancelled``).
- ``chat``: a chat-shaped start (``list[ChatMessage]``) that says what it was fed.
- ``shared``: says the shared state clients may write (``theme``, ``filters``; served with
  ``shared_adapter``) and counts its turns in ``turns`` (the workflow's own key). ``ask:``
  pauses for a yes/no, ``fail:`` raises, ``hold:<name>`` waits on a gate, ``grow:<n>`` adds
  ``n`` entries to ``log`` (a state that grows: its deltas stay small).
- ``growing``: three supersteps (``first`` -> ``second`` -> ``third``), each adding the text's
  number of entries to ``log`` and naming itself in ``step``; ``fail:<n>`` makes ``third``
  raise after the others grew the log; ``hold:<name>`` holds ``second`` on a gate.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from checkflow.adapters.agui import AGUIAdapter
from checkflow.agents import ChatMessage
from checkflow.state import register_state_type
from checkflow.workflows import (
    Executor,
    RequestCancelled,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


async def _gate(name: str) -> None:
    folder = Path(os.environ["CHECKFLOW_E2E_GATES"])
    (folder / f"{name}.entered").write_text("entered")
    release = folder / f"{name}.release"
    for _ in range(12_000):  # at most a minute: the test opens the gate or gives up
        if release.exists():
            return
        await asyncio.sleep(0.005)
    raise TimeoutError(f"gate {name!r} was never released")


@dataclass(frozen=True)
class Draft:
    topic: str
    text: str


class Writer(Executor):
    @handler
    async def write(self, topic: str, ctx: WorkflowContext[Draft]) -> None:
        if topic.startswith("fail:"):
            raise RuntimeError(f"the writer refused {topic.removeprefix('fail:')!r}")
        if topic.startswith("hold:"):
            await _gate(topic.removeprefix("hold:"))
        await ctx.send_message(Draft(topic=topic, text=f"Five things about {topic}."))


class Reviewer(Executor):
    @handler
    async def review(self, draft: Draft, ctx: WorkflowContext) -> None:
        ctx.executor_state["draft"] = draft.text
        await ctx.request_info({"question": "Publish this draft?", "draft": draft.text},
                               response_type=bool)

    @response_handler
    async def decide(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        draft = ctx.executor_state.pop("draft", "")
        await ctx.yield_output(f"published: {draft}" if approved else "dropped")


_writer, _reviewer = Writer("writer"), Reviewer("reviewer")
approval = WorkflowBuilder(start_executor=_writer, name="agui-approval").add_edge(
    _writer, _reviewer).build()


class Fork(Executor):
    @handler
    async def fork(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)


class Counter(Executor):
    @handler
    async def ask(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.request_info({"question": f"{self.id}: how many for {text}?"},
                               response_type=int)

    @response_handler
    async def answered(
        self, request: dict, count: int | RequestCancelled, ctx: WorkflowContext
    ) -> None:
        said = "cancelled" if isinstance(count, RequestCancelled) else str(count)
        await ctx.yield_output(f"{self.id}: {said}")


_fork, _left, _right = Fork("fork"), Counter("left"), Counter("right")
two_requests = WorkflowBuilder(start_executor=_fork, name="agui-two").add_fan_out_edges(
    _fork, [_left, _right]).build()


class Listener(Executor):
    @handler
    async def hear(self, messages: list[ChatMessage], ctx: WorkflowContext) -> None:
        texts = " | ".join(m.text for m in messages)
        await ctx.yield_output(ChatMessage("assistant", f"heard {len(messages)}: {texts}"))


chat = WorkflowBuilder(start_executor=Listener("listener"), name="agui-chat").build()


@register_state_type
@dataclass(frozen=True)
class Filters:
    tags: list[str]
    limit: int = 10


SHARED_WRITABLE = {"theme": str, "filters": Filters}
"""The shared-state keys an AG-UI client may write in the ``shared`` flow, with their types."""


def _says(ctx: WorkflowContext) -> str:
    filters = ctx.get_state("filters")
    tags = ",".join(filters.tags) if isinstance(filters, Filters) else "-"
    return f"theme={ctx.get_state('theme', 'plain')} tags={tags}"


class Sayer(Executor):
    @handler
    async def say(self, text: str, ctx: WorkflowContext) -> None:
        ctx.set_state("turns", ctx.get_state("turns", 0) + 1)
        if text.startswith("fail:"):
            raise RuntimeError("the sayer refused")
        if text.startswith("hold:"):
            await _gate(text.removeprefix("hold:"))
        if text.startswith("grow:"):
            log = list(ctx.get_state("log", []))
            start = len(log)
            log.extend(f"entry {start + i}" for i in range(int(text.removeprefix("grow:"))))
            ctx.set_state("log", log)
        await ctx.yield_output(f"{text}: {_says(ctx)}")
        if text.startswith("ask:"):
            await ctx.request_info({"question": "Again?"}, response_type=bool)

    @response_handler
    async def again(self, request: dict, yes: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"again: {_says(ctx)}" if yes else "no")


shared = WorkflowBuilder(start_executor=Sayer("sayer"), name="agui-shared").build()
shared_adapter = AGUIAdapter(writable_state=SHARED_WRITABLE)


class Grower(Executor):
    @handler
    async def grow(self, text: str, ctx: WorkflowContext[str]) -> None:
        held = text.startswith("hold:")
        count = 1 if held else int(text.rsplit(":", 1)[-1])
        if text.startswith("fail:") and self.id == "third":
            raise RuntimeError("the third grower refused")
        if held and self.id == "second":
            await _gate(text.removeprefix("hold:"))
        log = list(ctx.get_state("log", []))
        log.extend(f"{self.id} {len(log) + i}" for i in range(count))
        ctx.set_state("log", log)
        ctx.set_state("step", self.id)
        if self.id == "third":
            await ctx.yield_output(f"grew to {len(log)}")
        else:
            await ctx.send_message(text)


_first, _second, _third = Grower("first"), Grower("second"), Grower("third")
growing = WorkflowBuilder(start_executor=_first, name="agui-growing").add_chain(
    [_first, _second, _third]).build()
