"""Workflows the engine tests share; importable by the tests AND by fresh subprocesses.

``main()`` resumes a stored checkpoint in a brand-new interpreter (imported as
``engine_samples``, never run as ``__main__``, so class names match the parent's):
``main(["resume", <storage root>, <checkpoint id>, <answers as JSON>?])`` prints one JSON line
describing what the rebuilt workflow reported.
"""

from __future__ import annotations

import asyncio
import json
import types
from dataclasses import dataclass
from typing import Any

from fresh_interpreter import run_main

from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


class Forward(Executor):
    """Passes an int on unchanged: a start node, or a delay of one superstep."""

    @handler
    async def forward(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n)


class Start(Forward):
    """The start node of the sample graphs."""


class Halver(Executor):
    """Halves until 1, then asks whether to publish (the DESIGN example's worker)."""

    @handler
    async def step(self, n: int, ctx: WorkflowContext[int]) -> None:
        ctx.executor_state["seen"] = ctx.executor_state.get("seen", 0) + 1
        if n <= 1:
            await ctx.request_info({"question": "publish?"}, response_type=bool)
        else:
            await ctx.send_message(n // 2)

    @response_handler
    async def on_answer(
        self, request: dict, approved: bool, ctx: WorkflowContext[int, str]
    ) -> None:
        await ctx.yield_output("published" if approved else "dropped")


def build_factor(name: str = "factor") -> Workflow:
    start, worker = Start(id="start"), Halver(id="worker")
    return (
        WorkflowBuilder(start_executor=start, name=name)
        .add_edge(start, worker)
        .add_edge(worker, worker)
        .build()
    )


@dataclass
class Approval:
    approved: bool
    reviewer: str


@dataclass
class Draft:
    text: str


class Writer(Executor):
    @handler
    async def write(self, topic: str, ctx: WorkflowContext[Draft]) -> None:
        await ctx.send_message(Draft(f"about {topic}"))


class Reviewer(Executor):
    """Asks twice: once for an Approval (a dataclass), once for a plain bool."""

    @handler
    async def review(self, draft: Draft, ctx: WorkflowContext) -> None:
        await ctx.request_info(draft, response_type=Approval, request_id="approve")
        await ctx.request_info({"q": "urgent?"}, response_type=bool, request_id="urgent")

    @response_handler
    async def on_approval(self, draft: Draft, answer: Approval, ctx: WorkflowContext) -> None:
        verdict = "published" if answer.approved else "dropped"
        await ctx.yield_output(f"{verdict} by {answer.reviewer}: {draft.text}")

    @response_handler
    async def on_urgent(self, request: dict, urgent: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output(f"urgent={urgent}")


def build_review() -> Workflow:
    writer, reviewer = Writer(id="writer"), Reviewer(id="reviewer")
    return WorkflowBuilder(start_executor=writer, name="review").add_edge(writer, reviewer).build()


async def _resume(root: str, checkpoint_id: str, answers: dict[str, object] | None) -> None:
    workflow = build_review()  # first: building registers the classes the state names
    storage = FileCheckpointStorage(root)
    checkpoint = await storage.load(checkpoint_id)
    result = await workflow.run(checkpoint=checkpoint, responses=answers)
    print(
        json.dumps(
            {
                "status": result.status.value,
                "signature": workflow.graph_signature_hash,
                "pending": {
                    rid: {
                        "response_type_is": (
                            "Approval"
                            if p.response_type is Approval
                            else "bool"
                            if p.response_type is bool
                            else repr(p.response_type)
                        ),
                        "source": p.source_executor_id,
                    }
                    for rid, p in result.pending_requests.items()
                },
                "outputs": result.get_outputs(),
                "snapshots": len(checkpoint.snapshots),
            }
        ),
        flush=True,
    )


def fingerprint(root: Any) -> Any:
    """A deep, address-free description of everything reachable from ``root``.

    Walks instance dicts and slots, containers and mapping proxies; functions and classes are
    named, never entered. Equal fingerprints mean no object in the graph changed.
    """
    seen: dict[int, int] = {}

    def walk(obj: Any) -> Any:
        if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
            return obj
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            return ("callable", getattr(obj, "__qualname__", repr(type(obj))))
        if isinstance(obj, types.MethodType):
            return ("method", obj.__func__.__qualname__, walk(obj.__self__))
        if id(obj) in seen:
            return ("ref", seen[id(obj)])
        seen[id(obj)] = len(seen)
        kind = type(obj).__qualname__
        if isinstance(obj, (dict, types.MappingProxyType)):
            return (kind, sorted((repr(k), walk(v)) for k, v in obj.items()))
        if isinstance(obj, (list, tuple)):
            return (kind, [walk(v) for v in obj])
        if isinstance(obj, (set, frozenset)):
            return (kind, sorted(repr(walk(v)) for v in obj))
        fields: dict[str, Any] = dict(getattr(obj, "__dict__", {}))
        for klass in type(obj).__mro__:
            for name in getattr(klass, "__slots__", ()):
                if hasattr(obj, name):
                    fields[name] = getattr(obj, name)
        return (kind, sorted((k, walk(v)) for k, v in fields.items()))

    return walk(root)


def main(argv: list[str]) -> None:
    if argv[0] == "resume":
        given = json.loads(argv[3]) if len(argv) > 3 else None
        asyncio.run(_resume(argv[1], argv[2], given))
    elif argv[0] == "signature":
        print(build_factor().graph_signature_hash, build_review().graph_signature_hash, flush=True)


def run_fresh(*argv: str) -> str:
    """Run ``main(argv)`` in a fresh interpreter and return its stdout."""
    return run_main(__file__, *argv)
