"""The tool loop: the model asks for calls, the tools run, their results go back, until it answers.

``ToolCallingAgent`` runs the loop one *step* at a time: a step either makes one model call or
runs the calls the last one asked for, so that an ``AgentExecutor`` commits between them: the
calls (with their ids) before any runs, and their results before the next model call. A
call whose result was committed never runs again, whatever happens after; a call cut short
by a crash runs again under the same call id. Between steps the loop lives in the
session (``session.state["tool_loop"]``: the round's calls, their results by call id, what
is asked), so a resume in another process continues where the last commit left it. A call
pauses the loop when it needs a person's approval (``ToolApprovalRequest``) or is a tool the
client runs (``ClientToolCall``); a call to a tool given as a plain definition ends the turn
with the call, for the caller to answer (as before tools ran here). This module must never
keep a call, a result or a session on the agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

import msgspec

from checkflow.agents._base import HISTORY_KEY, BaseAgent, get_history
from checkflow.agents._messages import (
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    UserInputRequestContent,
)
from checkflow.agents._tool_requests import (
    ClientTool,
    ClientToolCall,
    ToolApproval,
    ToolApprovalRequest,
)
from checkflow.agents._tool_trace import approval_event, tool_span
from checkflow.agents._tools import FunctionTool
from checkflow.agents._types import AgentResponse, AgentResponseUpdate, UsageDetails
from checkflow.errors import MaxToolRoundsError, ToolArgumentsError
from checkflow.sessions import AgentSession

__all__ = ["LOOP_KEY", "AgentStep", "ModelReply", "ToolAgent", "ToolCallingAgent", "ToolLike"]

LOOP_KEY: Final = "tool_loop"
"""``session.state[LOOP_KEY]``: the tool round in progress (absent between turns)."""

ToolLike = FunctionTool | Mapping[str, Any] | Any
"""What ``tools=`` takes: ``@tool`` functions, plain functions (made tools), or Chat
Completions tool definitions (whose calls are returned to the caller)."""


@dataclass(frozen=True, slots=True)
class ModelReply:
    """What one model call produced: the assistant message (text and calls) and its usage."""

    message: ChatMessage
    usage: UsageDetails | None = None


@dataclass(frozen=True, slots=True)
class AgentStep:
    """The end of one step: the response so far, and whether another step must follow.

    ``more`` is set when the step recorded the model's calls or ran them, and the next step
    must follow (after a commit); otherwise the turn ended (an answer, a pause or calls for
    the caller) with ``response``.
    """

    response: AgentResponse
    more: bool = False


@runtime_checkable
class ToolAgent(Protocol):
    """An agent that runs its tool loop step by step (``AgentExecutor`` commits between)."""

    @property
    def name(self) -> str: ...

    def run_step(
        self, messages: Sequence[ChatMessage], session: AgentSession, *,
        client_tools: Sequence[ClientTool] = (), stream: bool = False,
    ) -> AsyncIterator[AgentResponseUpdate | AgentStep]:
        """Updates as they stream (when ``stream``), then one ``AgentStep``."""
        ...

    def check_approval(self, request: ToolApprovalRequest, approval: ToolApproval) -> None:
        """Raise ``ToolArgumentsError`` when an approval's edited arguments do not fit."""
        ...


class ToolCallingAgent(BaseAgent):
    """A ``BaseAgent`` whose model can call tools; subclasses implement ``_complete``.

    ``run`` runs the whole loop (every step) and records each step in the session as it
    ends; ``max_tool_rounds`` model calls may ask for tools, then one more is made with
    ``tool_choice="none"`` for the answer (``MaxToolRoundsError`` if it still calls one).
    """

    def __init__(self, name: str, *, tools: Iterable[ToolLike] = (),
                 max_tool_rounds: int = 10) -> None:
        super().__init__(name)
        if max_tool_rounds < 1:
            raise ValueError("max_tool_rounds must be at least 1")
        self.max_tool_rounds = max_tool_rounds
        self.function_tools: dict[str, FunctionTool] = {}
        self.tools: list[dict[str, Any]] = []  # plain definitions, answered by the caller
        for item in tools:
            if isinstance(item, Mapping):
                self.tools.append(dict(item))
                continue
            found = item if isinstance(item, FunctionTool) else FunctionTool(item)
            if found.name in self.function_tools:
                raise ValueError(f"two tools are named {found.name!r}")
            self.function_tools[found.name] = found

    def _complete(self, history: Sequence[ChatMessage], tools: list[dict[str, Any]],
                  tool_choice: str | None, stream: bool
                  ) -> AsyncIterator[AgentResponseUpdate | ModelReply]:
        """One model call: its updates (when ``stream``), then its ``ModelReply``."""
        raise NotImplementedError

    async def _respond(self, messages: list[ChatMessage], session: AgentSession
                       ) -> AgentResponse:
        step = AgentStep(AgentResponse())
        pending: Sequence[ChatMessage] = messages
        while True:
            async for item in self.run_step(pending, session):
                if isinstance(item, AgentStep):
                    step = item
            if not step.more:
                return step.response
            pending = ()

    async def _stream(self, messages: list[ChatMessage], session: AgentSession
                      ) -> AsyncIterator[AgentResponseUpdate]:
        pending: Sequence[ChatMessage] = messages
        while True:
            more = False
            async for item in self.run_step(pending, session, stream=True):
                if isinstance(item, AgentStep):
                    more = item.more
                else:
                    yield item
            if not more:
                return
            pending = ()

    def check_approval(self, request: ToolApprovalRequest, approval: ToolApproval) -> None:
        """Raise ``ToolArgumentsError`` when an approval's edited arguments do not fit."""
        found = self.function_tools.get(request.tool_name)
        if found is not None and approval.approved and approval.arguments is not None:
            found.validate(approval.arguments)

    async def run_step(
        self, messages: Sequence[ChatMessage], session: AgentSession, *,
        client_tools: Sequence[ClientTool] = (), stream: bool = False,
    ) -> AsyncIterator[AgentResponseUpdate | AgentStep]:
        """One step of the loop on ``messages`` (new input, or answers to what it asked)."""
        loop = _Loop.load(session, messages)
        clients = {t.name: t for t in client_tools if t.name not in self.function_tools}
        if not loop.calls:
            tools = self._definitions(clients.values())
            last = loop.rounds >= self.max_tool_rounds
            reply: ModelReply | None = None
            async for item in self._complete(loop.history, tools, "none" if last and tools
                                             else None, stream):
                if isinstance(item, ModelReply):
                    reply = item
                else:
                    yield item
            assert reply is not None, "_complete must end with a ModelReply"
            loop.add_usage(reply.usage)
            calls = [c for c in reply.message.contents if isinstance(c, FunctionCallContent)]
            if calls and last:
                raise MaxToolRoundsError(self.max_tool_rounds, [c.name for c in calls])
            loop.history.append(reply.message)
            if not calls:
                loop.finish(session)
                yield AgentStep(AgentResponse([reply.message], self.name, loop.usage))
                return
            loop.start_round(calls, reply.message, self._kinds(calls, clients))
            if "function" in loop.kinds.values():  # the calls are committed before they run
                loop.save(session)
                yield AgentStep(AgentResponse([], self.name, loop.usage), more=True)
                return
        asks = await self._resolve(loop)
        if asks:
            loop.save(session)
            contents = tuple(UserInputRequestContent(a.call_id, a) for a in asks)
            if stream:
                yield AgentResponseUpdate(contents, "assistant", self.name)
            yield AgentStep(AgentResponse([ChatMessage("assistant", contents)], self.name,
                                          loop.usage))
            return
        external = loop.external_calls()
        if external:  # the caller answers these in its next run, as new input
            reply_message = loop.round_message or ChatMessage("assistant", external)
            loop.end_round(partial=True)
            loop.finish(session)
            yield AgentStep(AgentResponse([reply_message], self.name, loop.usage))
            return
        if stream:
            yield AgentResponseUpdate(tuple(loop.round_results()), "tool", self.name)
        loop.end_round()
        loop.save(session)  # committed before the model sees the results
        yield AgentStep(AgentResponse([], self.name, loop.usage), more=True)

    def _definitions(self, clients: Iterable[ClientTool]) -> list[dict[str, Any]]:
        return [*(t.definition() for t in self.function_tools.values()), *self.tools,
                *({"type": "function", "function": {"name": c.name, "description": c.description,
                                                    "parameters": c.parameters}}
                  for c in clients)]

    def _kinds(self, calls: list[FunctionCallContent], clients: Mapping[str, ClientTool]
               ) -> dict[str, str]:
        external = {str(t.get("function", {}).get("name")) for t in self.tools}
        runs_tools = bool(self.function_tools or clients)
        kinds: dict[str, str] = {}
        for call in calls:
            if call.name in self.function_tools:
                kinds[call.call_id] = "function"
            elif call.name in clients:
                kinds[call.call_id] = "client"
            elif call.name in external or not runs_tools:  # the caller runs these
                kinds[call.call_id] = "external"
            else:
                kinds[call.call_id] = "unknown"
        return kinds

    async def _resolve(self, loop: _Loop) -> list[ToolApprovalRequest | ClientToolCall]:
        """Answer every call of the round that can be answered now; what must be asked."""
        asks: list[ToolApprovalRequest | ClientToolCall] = []
        runs: list[tuple[FunctionCallContent, FunctionTool, dict[str, Any]]] = []
        for call in loop.calls:
            if call.call_id in loop.results:
                continue
            kind = loop.kinds.get(call.call_id, "unknown")
            answer = loop.answers.get(call.call_id, _MISSING)
            if kind == "client":
                if answer is _MISSING:
                    asks.append(ClientToolCall(tool_name=call.name, call_id=call.call_id,
                                               arguments=dict(call.arguments)))
                else:
                    loop.results[call.call_id] = answer
            elif kind == "external":
                if answer is not _MISSING:
                    loop.results[call.call_id] = answer
            elif kind == "unknown":
                known = ", ".join([*self.function_tools, *(str(t.get("function", {}).get(
                    "name")) for t in self.tools)]) or "none"
                loop.results[call.call_id] = (f"Error: there is no tool named {call.name!r} "
                                              f"(the tools are: {known}).")
            else:
                found = self.function_tools[call.name]
                decided = _function_call(found, call, answer, loop)
                if isinstance(decided, ToolApprovalRequest):
                    asks.append(decided)
                elif decided is not None:
                    runs.append((call, found, decided))
        if runs:
            results = await asyncio.gather(*(_invoke(t, c, a) for c, t, a in runs))
            for (call, _, _), result in zip(runs, results, strict=True):
                loop.results[call.call_id] = result
        return asks


_MISSING: Final = object()


def _function_call(found: FunctionTool, call: FunctionCallContent, answer: Any,
                   loop: _Loop) -> ToolApprovalRequest | dict[str, Any] | None:
    """What to do with one call of ``found``: ask, run with these arguments, or nothing (its
    result is recorded already: an error or a denial)."""
    arguments = dict(call.arguments)
    if isinstance(answer, ToolApproval):
        approval_event(call.name, call.call_id, "approved" if answer.approved else "denied")
        if not answer.approved:
            why = f": {answer.reason}" if answer.reason else ""
            loop.results[call.call_id] = f"The user denied this call{why}. It did not run."
            return None
        if answer.arguments is not None:
            arguments = dict(answer.arguments)
    try:
        validated = found.validate(arguments)
    except ToolArgumentsError as exc:
        loop.results[call.call_id] = (f"Error: {exc}. Call the tool again with arguments "
                                      "that match its schema.")
        return None
    if answer is _MISSING and found.needs_approval(validated):
        approval_event(call.name, call.call_id, "requested")
        return ToolApprovalRequest(tool_name=call.name, call_id=call.call_id,
                                   arguments=validated, description=found.description)
    return validated


def _as_approval(tool_name: str, answer: Any) -> ToolApproval:
    """The answer to an approval as a ``ToolApproval`` (a JSON object or a bare bool are
    accepted); anything else is refused before the session changes, never taken as a yes."""
    if isinstance(answer, ToolApproval):
        return answer
    if isinstance(answer, bool):
        return ToolApproval(approved=answer)
    try:
        return msgspec.convert(answer, ToolApproval)
    except msgspec.ValidationError as exc:
        raise ToolArgumentsError(tool_name, f"the answer to its approval must be a "
                                 f"ToolApproval ({{\"approved\": true}}): {exc}") from None


async def _invoke(found: FunctionTool, call: FunctionCallContent, arguments: dict[str, Any]
                  ) -> Any:
    """Run one call; a failure becomes the result the model reads (never the turn's end)."""
    with tool_span(found.name, call.call_id) as span:
        try:
            return await found.invoke(arguments, call.call_id)
        except Exception as exc:
            span.fail(exc)
            return f"Error: the tool {found.name!r} failed: {type(exc).__name__}: {exc}"


class _Loop:
    """The session's tool round, read once per step and written back once."""

    def __init__(self, history: list[ChatMessage], state: Mapping[str, Any]) -> None:
        self.history = history
        self.calls: list[FunctionCallContent] = list(state.get("calls", ()))
        self.kinds: dict[str, str] = dict(state.get("kinds", {}))
        self.results: dict[str, Any] = dict(state.get("results", {}))
        self.answers: dict[str, Any] = {}
        self.rounds: int = int(state.get("rounds", 0))
        self.usage: UsageDetails | None = state.get("usage")
        self.round_message: ChatMessage | None = state.get("message")
        self.pending_input: list[ChatMessage] = []  # new input after the round's results

    @classmethod
    def load(cls, session: AgentSession, messages: Sequence[ChatMessage]) -> _Loop:
        state = session.state.get(LOOP_KEY)
        loop = cls(get_history(session), state if isinstance(state, Mapping) else {})
        if not isinstance(state, Mapping):
            loop.history.extend(messages)  # a new turn
            return loop
        if not loop.calls:  # between two steps; new input starts a new turn on what was left
            if messages:
                loop.rounds, loop.usage = 0, None
            loop.history.extend(messages)
            return loop
        open_ids = {c.call_id for c in loop.calls} - set(loop.results)
        rest: list[ChatMessage] = []
        for message in messages:
            contents = []
            for item in message.contents:
                if isinstance(item, FunctionResultContent) and item.call_id in open_ids:
                    loop.answers[item.call_id] = (
                        _as_approval(loop.tool_name(item.call_id), item.result)
                        if loop.kinds.get(item.call_id) == "function" else item.result)
                else:
                    contents.append(item)
            if contents:
                rest.append(ChatMessage(message.role, contents))
        if rest:  # the conversation moved on: what is still open will never be answered
            for call_id in open_ids - set(loop.answers):
                loop.results[call_id] = "Not run: the conversation moved on before it was."
        loop.pending_input = rest
        return loop

    def tool_name(self, call_id: str) -> str:
        return next((c.name for c in self.calls if c.call_id == call_id), "")

    def add_usage(self, usage: UsageDetails | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def start_round(self, calls: list[FunctionCallContent], message: ChatMessage,
                    kinds: dict[str, str]) -> None:
        self.calls, self.kinds, self.results = calls, kinds, {}
        self.round_message = message
        self.rounds += 1

    def external_calls(self) -> list[FunctionCallContent]:
        return [c for c in self.calls if c.call_id not in self.results]

    def round_results(self) -> list[FunctionResultContent]:
        """The round's results there are, in call order."""
        return [FunctionResultContent(c.call_id, self.results[c.call_id])
                for c in self.calls if c.call_id in self.results]

    def end_round(self, *, partial: bool = False) -> None:
        """The round's results go into the history, in call order (``partial``: those there
        are; the caller sends the rest)."""
        results = self.round_results()
        if results or not partial:
            self.history.append(ChatMessage("tool", results))
        self.history.extend(self.pending_input)
        self.calls, self.kinds, self.results, self.round_message = [], {}, {}, None

    def save(self, session: AgentSession) -> None:
        session.state[HISTORY_KEY] = self.history
        session.state[LOOP_KEY] = {
            "calls": self.calls, "kinds": self.kinds, "results": self.results,
            "rounds": self.rounds, "usage": self.usage, "message": self.round_message}

    def finish(self, session: AgentSession) -> None:
        session.state[HISTORY_KEY] = self.history
        session.state.pop(LOOP_KEY, None)
