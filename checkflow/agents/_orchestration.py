"""``SequentialBuilder`` and ``ConcurrentBuilder``: common agent orchestrations as workflows.

They live in ``checkflow.agents`` (not ``checkflow.workflows``) because an agent participant
is wrapped in an ``AgentExecutor``, and the engine must never import the agents layer
(tests/test_layering.py); ``checkflow`` re-exports them. What they build is an ordinary
``Workflow``: it checkpoints like any other, and this module must never keep anything of a
run on a builder, a participant or the built workflow.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Never

from checkflow.agents._executor import AgentExecutor
from checkflow.agents._messages import ChatMessage, normalize_messages
from checkflow.agents._protocol import Agent
from checkflow.agents._types import AgentResponse
from checkflow.errors import WorkflowValidationError
from checkflow.state import register_state_type
from checkflow.workflows import Executor, Workflow, WorkflowBuilder, WorkflowContext, handler

__all__ = ["BranchRetry", "ConcurrentBuilder", "SequentialBuilder"]

Participant = Agent | Executor
Aggregator = Callable[[list[Any]], Any]

_CONVERSATION = "conversation"  # a sequential step's input, kept until its reply is in
_RETRY = "retry"  # a concurrent branch's input, kept after its agent failed


@register_state_type(type_id="checkflow.BranchRetry")
@dataclass(frozen=True, slots=True)
class BranchRetry:
    """Sent by a concurrent branch to itself after its agent failed: run the turn again.

    The failed attempt's error is kept for people reading the snapshot.
    """

    error: str


class _Input(Executor):
    """The start of an orchestration: any chat input becomes the conversation."""

    @handler
    async def start(self, message: str | ChatMessage | list[ChatMessage],
                    ctx: WorkflowContext[list[ChatMessage], Never]) -> None:
        await ctx.send_message(normalize_messages(message))


class _Output(Executor):
    """The end of a sequential orchestration: the whole conversation is the output."""

    @handler
    async def finish(self, conversation: list[ChatMessage],
                     ctx: WorkflowContext[Any, list[ChatMessage]]) -> None:
        await ctx.yield_output(conversation)


def _as_input(conversation: list[ChatMessage]) -> list[ChatMessage]:
    """Earlier participants' replies reach an agent as user messages: they are its input,
    not its own turns (as ``AgentExecutor`` does with an upstream ``AgentResponse``)."""
    return [ChatMessage("user", m.contents) if m.role == "assistant" else m
            for m in conversation]


class _SequentialAgent(AgentExecutor):
    """An agent step that receives the conversation and sends it on with its reply added
    (the conversation passed on keeps every participant's reply as an assistant message)."""

    @handler
    async def on_input(  # type: ignore[override]
        self, message: list[ChatMessage], ctx: WorkflowContext[list[ChatMessage], Never]
    ) -> None:
        if message:  # empty: the next step of this agent's tool loop, on the same turn
            ctx.executor_state[_CONVERSATION] = list(message)
        await self._turn(_as_input(message), ctx)

    async def _deliver(self, response: AgentResponse, ctx: WorkflowContext[Any, Any]) -> None:
        conversation: list[ChatMessage] = ctx.executor_state.pop(_CONVERSATION, [])
        await ctx.send_message([*conversation, *response.messages])


class _BranchAgent(AgentExecutor):
    """A concurrent branch: a failed turn is kept as a retry, so the superstep still commits
    the branches that finished; the retry runs in the next superstep, and if it fails again
    the run fails with the finished branches already in the checkpoint."""

    @handler
    async def on_input(  # type: ignore[override]
        self, message: list[ChatMessage],
        ctx: WorkflowContext[AgentResponse | BranchRetry, Never],
    ) -> None:
        try:
            await self._turn(list(message), ctx)
        except Exception as exc:  # kept as a retry; the second failure is raised
            ctx.executor_state[_RETRY] = list(message)
            await ctx.send_message(BranchRetry(f"{type(exc).__name__}: {exc}"), self.id)

    @handler
    async def on_retry(self, retry: BranchRetry,
                       ctx: WorkflowContext[AgentResponse | BranchRetry, Never]) -> None:
        messages: list[ChatMessage] = ctx.executor_state.pop(_RETRY, [])
        await self._turn(messages, ctx)


class _Aggregate(Executor):
    """The fan-in end of a concurrent orchestration: aggregates the replies, yields that."""

    def __init__(self, id: str, aggregator: Aggregator | None) -> None:
        super().__init__(id)
        self._aggregator = aggregator

    def signature_extra(self) -> dict[str, Any]:
        aggregator = self._aggregator
        return {"aggregator": None if aggregator is None else getattr(
            aggregator, "__qualname__", type(aggregator).__qualname__)}

    @handler
    async def aggregate(self, replies: list[Any], ctx: WorkflowContext[Any, Any]) -> None:
        if self._aggregator is None:
            await ctx.yield_output(replies)
            return
        result = self._aggregator(replies)
        if inspect.isawaitable(result):
            result = await result
        await ctx.yield_output(result)


def _participants(participants: Sequence[Participant], role: str) -> list[Participant]:
    found = list(participants)
    if not found:
        raise WorkflowValidationError(f"{role} needs at least one participant")
    for item in found:
        if not isinstance(item, Executor) and not isinstance(item, Agent):
            raise TypeError(
                f"a {role} participant is an Agent or an Executor, not {type(item).__name__}")
    return found


class SequentialBuilder:
    """Participants take turns on one conversation, each seeing everything said before.

    The input (a str, a ``ChatMessage`` or a list of them) becomes a ``list[ChatMessage]``;
    an agent participant (wrapped in an ``AgentExecutor``) receives it and passes it on with
    its reply appended; an executor participant receives the list and must send the list on.
    The output is the final conversation. Each step is a superstep, so each is a snapshot.
    """

    def __init__(self, participants: Sequence[Participant], *, name: str = "sequential",
                 max_iterations: int = 100) -> None:
        self._participants = _participants(participants, "SequentialBuilder")
        self._name = name
        self._max_iterations = max_iterations

    def build(self) -> Workflow:
        """The orchestration as a ``Workflow`` (``WorkflowValidationError`` on a bad graph)."""
        steps: list[Executor] = [_Input(f"{self._name}.input")]
        for item in self._participants:
            steps.append(item if isinstance(item, Executor) else _SequentialAgent(item))
        steps.append(_Output(f"{self._name}.output"))
        return (WorkflowBuilder(start_executor=steps[0], name=self._name,
                                max_iterations=self._max_iterations)
                .add_chain(steps).build())


class ConcurrentBuilder:
    """Every participant answers the same input at once; the replies are aggregated.

    The input becomes a ``list[ChatMessage]`` fanned out to every participant; the fan-in
    delivers the replies in participant order to ``aggregator`` (sync or async, given the
    list); without one the output is that list. An agent participant's failed turn is
    retried once in the next superstep, after the finished branches were committed; if the
    retry fails too the run fails, and resuming the checkpoint retries only that branch. An
    executor participant runs as any executor (a failure re-runs its whole superstep).
    """

    def __init__(self, participants: Sequence[Participant], aggregator: Aggregator | None = None,
                 *, name: str = "concurrent", max_iterations: int = 100) -> None:
        self._participants = _participants(participants, "ConcurrentBuilder")
        if aggregator is not None and not callable(aggregator):
            raise TypeError(f"aggregator must be callable, not {type(aggregator).__name__}")
        self._aggregator = aggregator
        self._name = name
        self._max_iterations = max_iterations

    def build(self) -> Workflow:
        """The orchestration as a ``Workflow`` (``WorkflowValidationError`` on a bad graph)."""
        start = _Input(f"{self._name}.input")
        branches = [item if isinstance(item, Executor) else _BranchAgent(item)
                    for item in self._participants]
        end = _Aggregate(f"{self._name}.aggregator", self._aggregator)
        builder = (WorkflowBuilder(start_executor=start, name=self._name,
                                   max_iterations=self._max_iterations)
                   .add_fan_out_edges(start, branches).add_fan_in_edges(branches, end))
        for branch in branches:
            if isinstance(branch, _BranchAgent):
                builder.add_edge(branch, branch)  # carries only its BranchRetry
        return builder.build()
