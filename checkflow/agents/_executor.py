"""``AgentExecutor``: an agent as a workflow node, its session kept in the run's state.

The executor object is a definition shared by every run. The agent's ``AgentSession`` lives
at ``ctx.executor_state["session"]`` (so in ``executor_states[<id>]["session"]`` of every
snapshot) and user-input requests the agent raises become workflow requests. This module must
never keep a session, a pending answer or any other per-run value on the executor or the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checkflow.agents._messages import (
    ChatMessage,
    FunctionResultContent,
    UserInputRequestContent,
    normalize_messages,
)
from checkflow.agents._protocol import Agent
from checkflow.agents._tool_loop import AgentStep, ToolAgent
from checkflow.agents._tool_requests import (
    CLIENT_TOOLS_KEY,
    ToolApproval,
    ToolApprovalRequest,
    client_tools,
    tool_request,
)
from checkflow.agents._types import AgentResponse, AgentResponseUpdate
from checkflow.sessions import AgentSession
from checkflow.state import register_state_type
from checkflow.workflows import (
    Executor,
    WorkflowContext,
    WorkflowEvent,
    handler,
    response_handler,
)

__all__ = ["AgentExecutor", "AgentExecutorRequest", "AgentRunUpdateEvent"]

_SESSION = "session"
_AWAITING = "awaiting"  # request ids the agent asked and that are not all answered yet
_ANSWERS = "answers"  # request id -> answer, collected until every awaited one is in


@register_state_type(type_id="checkflow.AgentExecutorRequest")
@dataclass(frozen=True, slots=True)
class AgentExecutorRequest:
    """Explicit input for an ``AgentExecutor``: the messages to send the agent this turn."""

    messages: list[ChatMessage] = field(default_factory=list)


@dataclass(slots=True)
class AgentRunUpdateEvent(WorkflowEvent):
    """A piece of an agent's reply, emitted live by ``AgentExecutor(..., stream=True)``."""

    executor_id: str
    update: AgentResponseUpdate


AgentExecutorInput = str | ChatMessage | list[ChatMessage] | AgentExecutorRequest | AgentResponse


class AgentExecutor(Executor):
    """Runs ``agent`` on each message it receives and sends the ``AgentResponse`` on.

    Input is a str, a ``ChatMessage``, a ``list[ChatMessage]``, an ``AgentExecutorRequest``
    or an upstream agent's ``AgentResponse`` (its messages arrive as user messages: they are
    this agent's input, not its own turns). The session is taken from
    ``ctx.executor_state["session"]`` (created on first use) and stored back after the turn.
    When the agent answers with ``UserInputRequestContent``s, each becomes
    ``ctx.request_info(...)`` under the content's ``request_id``; once all are answered the
    agent gets them as ``FunctionResultContent``s and its reply is sent on. With
    ``output_response=True`` each reply is also yielded as a workflow output; with
    ``stream=True`` the agent streams and each update is emitted as an ``AgentRunUpdateEvent``.

    An agent that runs tools (a ``ToolAgent``, such as ``OpenAIChatAgent(tools=[...])``)
    is driven a step per superstep, so each step is committed before the next: the model's
    calls before they run, their results before the model reads them. A call that needs
    approval or that the client runs (``CLIENT_TOOLS_KEY``) becomes a request like any other,
    answered with a ``ToolApproval`` or the tool's result.
    """

    def __init__(
        self,
        agent: Agent,
        id: str | None = None,
        *,
        output_response: bool = False,
        stream: bool = False,
    ) -> None:
        super().__init__(id if id is not None else agent.name)
        self._agent = agent
        self._output_response = output_response
        self._stream = stream

    @property
    def agent(self) -> Agent:
        """The agent this executor runs (a definition: it keeps no per-run state)."""
        return self._agent

    def signature_extra(self) -> dict[str, Any]:
        return {"agent": self._agent.name, "output_response": self._output_response}

    @handler
    async def on_input(
        self, message: AgentExecutorInput, ctx: WorkflowContext[AgentResponse, AgentResponse]
    ) -> None:
        """Take one turn of the conversation with ``message``."""
        await self._turn(_to_messages(message), ctx)

    @response_handler
    async def on_user_input(
        self,
        request: UserInputRequestContent,
        answer: Any,
        ctx: WorkflowContext[AgentResponse, AgentResponse],
    ) -> None:
        """Collect an answer; once every awaited request is answered, resume the agent."""
        state = ctx.executor_state
        answers: dict[str, Any] = state.setdefault(_ANSWERS, {})
        answers[request.request_id] = answer
        awaiting: list[str] = state.get(_AWAITING, [])
        if any(rid not in answers for rid in awaiting):
            return
        results = [FunctionResultContent(rid, answers[rid]) for rid in awaiting]
        del state[_AWAITING], state[_ANSWERS]
        await self._turn([ChatMessage("tool", results)], ctx)

    def check_response(self, request: Any, response: Any) -> None:
        """An approval's edited arguments must fit the tool (``ToolArgumentsError``)."""
        asked = tool_request(request)
        if isinstance(asked, ToolApprovalRequest) and isinstance(response, ToolApproval) \
                and isinstance(self._agent, ToolAgent):
            self._agent.check_approval(asked, response)

    def _session(self, ctx: WorkflowContext[Any, Any]) -> AgentSession:
        session = ctx.executor_state.get(_SESSION)
        return session if isinstance(session, AgentSession) else self._agent.create_session()

    async def _turn(self, messages: list[ChatMessage], ctx: WorkflowContext[Any, Any]) -> None:
        if isinstance(self._agent, ToolAgent):
            return await self._step(self._agent, messages, ctx)
        state = ctx.executor_state
        session = self._session(ctx)
        if self._stream:
            updates = []
            async for update in self._agent.run(messages, session=session, stream=True):
                updates.append(update)
                await ctx.add_event(AgentRunUpdateEvent(self.id, update))
            response = AgentResponse.from_updates(updates)
        else:
            response = await self._agent.run(messages, session=session)
        state[_SESSION] = session
        await self._finish(response, ctx)

    async def _step(self, agent: ToolAgent, messages: list[ChatMessage],
                    ctx: WorkflowContext[Any, Any]) -> None:
        """One step of a tool-calling agent's loop; a step that must be followed commits
        first (the superstep ends), then continues in the next superstep."""
        session = self._session(ctx)
        step: AgentStep | None = None
        async for item in agent.run_step(
                messages, session, client_tools=client_tools(ctx.get_state(CLIENT_TOOLS_KEY)),
                stream=self._stream):
            if isinstance(item, AgentStep):
                step = item
            else:
                await ctx.add_event(AgentRunUpdateEvent(self.id, item))
        assert step is not None, "run_step must end with an AgentStep"
        ctx.executor_state[_SESSION] = session
        if step.more:
            await ctx.continue_with(self._continuation())
            return
        await self._finish(step.response, ctx)

    def _continuation(self) -> Any:
        """The message the next step of a tool loop is delivered as: no new input."""
        return []

    async def _finish(self, response: AgentResponse, ctx: WorkflowContext[Any, Any]) -> None:
        """Ask what the agent asked for, or send its reply on."""
        requests = response.user_input_requests
        if requests:
            ctx.executor_state[_AWAITING] = [r.request_id for r in requests]
            for request in requests:
                asked = tool_request(request)
                await ctx.request_info(
                    request, request_id=request.request_id,
                    response_type=ToolApproval if isinstance(asked, ToolApprovalRequest) else Any)
            return
        await self._deliver(response, ctx)
        if self._output_response:
            await ctx.yield_output(response)

    async def _deliver(self, response: AgentResponse, ctx: WorkflowContext[Any, Any]) -> None:
        """Send the finished reply on (the orchestrations send the grown conversation)."""
        await ctx.send_message(response)


def _to_messages(message: AgentExecutorInput) -> list[ChatMessage]:
    if isinstance(message, AgentExecutorRequest):
        return list(message.messages)
    if isinstance(message, AgentResponse):  # another agent's reply is input, not our turn
        return [ChatMessage("user", m.contents) for m in message.messages]
    return normalize_messages(message)
