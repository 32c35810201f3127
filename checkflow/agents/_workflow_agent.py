"""``WorkflowAgent``: a workflow behind the ``Agent`` protocol, its checkpoint in the session.

``session.state["checkpoint"]`` holds the workflow's checkpoint: a ``CheckpointReference`` when
the agent has a ``checkpoint_storage`` (swapped for ``await storage.load(...)`` before a run,
since the codec is synchronous and knows no storage), else the unattached ``Checkpoint`` itself,
encoded whole. Pending requests travel as ``FunctionCallContent(name="request_info")`` and are
answered by ``FunctionResultContent``s. This module must never keep a checkpoint or a
conversation on the agent or the workflow.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from checkflow.agents._base import BaseAgent, append_history
from checkflow.agents._executor import AgentRunUpdateEvent
from checkflow.agents._messages import (
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    UserInputRequestContent,
)
from checkflow.agents._session_checkpoint import (
    CHECKPOINT_KEY,
    load_session_checkpoint,
    store_session_checkpoint,
)
from checkflow.agents._types import AgentResponse, AgentResponseUpdate
from checkflow.checkpoints import Checkpoint, CheckpointStorage
from checkflow.errors import AgentError, WorkflowValidationError
from checkflow.sessions import AgentSession
from checkflow.workflows import OutputEvent, set_agent_factory

if TYPE_CHECKING:
    from checkflow.workflows import Workflow, WorkflowRunResult, WorkflowRunStream

__all__ = ["CHECKPOINT_KEY", "REQUEST_INFO", "WorkflowAgent"]

REQUEST_INFO: Final = "request_info"
"""The function name under which pending workflow requests are surfaced."""


@dataclass(frozen=True, slots=True)
class _Reply:
    """A message of the reply; ``streamed`` if its content already went out as updates."""

    message: ChatMessage
    streamed: bool


class WorkflowAgent(BaseAgent):
    """Runs ``workflow`` as an agent: ``run(messages, session=...)`` is one workflow run.

    Messages go to the start executor as a ``list[ChatMessage]``; workflow outputs come back
    as assistant messages (an ``AgentResponse`` output contributes its messages). A run whose
    messages carry ``FunctionResultContent``s answers the pending requests with those call
    ids instead; requests still pending end the reply as one message of ``request_info``
    calls. With ``stream=True`` each output is streamed as soon as the workflow yields it, and
    the updates of ``AgentExecutor(..., stream=True)`` nodes as they arrive. A
    failed or abandoned run leaves the session as it was, so the next run starts from the
    last good turn.
    """

    def __init__(
        self,
        workflow: Workflow,
        *,
        name: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> None:
        super().__init__(name if name is not None else workflow.name)
        if not workflow.accepts_input([ChatMessage("user", "")]):
            raise WorkflowValidationError(
                f"workflow {workflow.name!r} cannot be an agent: its start executor "
                f"{workflow.start_executor_id!r} has no handler for list[ChatMessage]"
            )
        self._workflow = workflow
        self._storage = checkpoint_storage

    @property
    def workflow(self) -> Workflow:
        """The workflow this agent runs (a definition, shared by every session)."""
        return self._workflow

    @property
    def checkpoint_storage(self) -> CheckpointStorage | None:
        """Where new conversations' checkpoints are persisted (``None``: kept in the session)."""
        return self._storage

    async def _respond(self, messages: list[ChatMessage], session: AgentSession) -> AgentResponse:
        reply = [i.message async for i in self._turn(messages, session) if isinstance(i, _Reply)]
        return AgentResponse(messages=reply, author_name=self.name)

    async def _stream(
        self, messages: list[ChatMessage], session: AgentSession
    ) -> AsyncIterator[AgentResponseUpdate]:
        async with contextlib.aclosing(self._turn(messages, session)) as turn:
            async for item in turn:  # closing this stream closes (cancels) the run
                if isinstance(item, AgentResponseUpdate):
                    yield item
                elif not item.streamed:
                    message = item.message
                    yield AgentResponseUpdate(message.contents, message.role, self.name)

    async def _turn(
        self, messages: list[ChatMessage], session: AgentSession
    ) -> AsyncGenerator[_Reply | AgentResponseUpdate, None]:
        """One workflow run: agents' live updates and the outputs as they are yielded, then
        the pending requests.

        An ``AgentResponse`` output of an executor whose updates were already passed on is
        marked ``streamed``. The session is updated once the run has ended; a run that fails
        or is abandoned leaves it (and an unattached checkpoint's head) at the last good turn.
        """
        held = await load_session_checkpoint(
            session.state, self._storage, owner=f"session {session.session_id!r}")
        if held is None:
            checkpoint = self._workflow.create_checkpoint(checkpoint_storage=self._storage)
            good_head = None
        else:
            checkpoint, good_head = held.checkpoint, held.good_head
        reply: list[ChatMessage] = []
        streaming: set[str] = set()  # executors whose agent updates were passed on
        try:
            async with self._start(messages, checkpoint) as events:
                async for event in events:
                    if isinstance(event, AgentRunUpdateEvent):
                        streaming.add(event.executor_id)
                        yield event.update
                    elif isinstance(event, OutputEvent):
                        streamed = event.executor_id in streaming and isinstance(
                            event.data, AgentResponse
                        )
                        for message in _as_messages(event.data):
                            reply.append(message)
                            yield _Reply(message, streamed)
                result = await events.get_result()
        except BaseException:
            if checkpoint.checkpoint_storage is None and good_head is not None:
                checkpoint.restart_from(good_head)
            raise
        calls = _request_calls(result)
        store_session_checkpoint(session.state, checkpoint, checkpoint.head_snapshot_id)
        append_history(session, [*messages, *reply, *calls])
        for message in calls:
            yield _Reply(message, False)

    def _start(self, messages: list[ChatMessage], checkpoint: Checkpoint) -> WorkflowRunStream:
        """The run these messages ask for: answers to pending requests, or a new input."""
        contents = [c for m in messages for c in m.contents]
        answers = [c for c in contents if isinstance(c, FunctionResultContent)]
        if not answers:
            return self._workflow.run(messages, checkpoint=checkpoint, stream=True)
        if len(answers) != len(contents):
            raise AgentError(
                f"agent {self.name!r}: send the answers to pending requests "
                "(FunctionResultContent) in a run of their own"
            )
        responses = {a.call_id: a.result for a in answers}
        return self._workflow.run(responses=responses, checkpoint=checkpoint, stream=True)


def _request_calls(result: WorkflowRunResult) -> list[ChatMessage]:
    """The pending requests as one assistant message calling ``request_info`` (or none)."""
    calls = [
        FunctionCallContent(request_id, REQUEST_INFO, _arguments(request.data))
        for request_id, request in result.pending_requests.items()
    ]
    return [ChatMessage("assistant", calls)] if calls else []


def _as_messages(output: Any) -> list[ChatMessage]:
    if isinstance(output, AgentResponse):
        return list(output.messages)
    if isinstance(output, ChatMessage):
        return [output]
    if isinstance(output, list) and all(isinstance(m, ChatMessage) for m in output):
        return list(output)
    return [ChatMessage("assistant", output if isinstance(output, str) else str(output))]


def _arguments(data: Any) -> dict[str, Any]:
    """Request data as call arguments: a str-keyed mapping as is, else ``{"data": data}``."""
    if isinstance(data, UserInputRequestContent):
        return _arguments(data.data)
    if isinstance(data, Mapping) and all(isinstance(k, str) for k in data):
        return dict(data)
    return {"data": data}


set_agent_factory(WorkflowAgent)  # what Workflow.as_agent() builds (the engine never imports us)
