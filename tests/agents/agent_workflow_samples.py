"""Agent workflows shared by the AgentExecutor and WorkflowAgent tests, and the entry point the
fresh-process tests run (``python -c "import agent_workflow_samples; ...main(argv)"``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fresh_interpreter import run_main

from checkflow.agents import (
    AgentExecutor,
    AgentResponse,
    AgentResponseUpdate,
    BaseAgent,
    ChatMessage,
    FunctionResultContent,
    ScriptedAgent,
    TextContent,
    UserInputRequestContent,
)
from checkflow.agents._base import append_history, get_history
from checkflow.sessions import AgentSession, FileSessionStore
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import Workflow, WorkflowBuilder

PUBLISH = UserInputRequestContent("publish", {"question": "publish the draft?"})


def build_chain() -> Workflow:
    """writer -> editor; the editor's replies are the workflow's outputs."""
    writer = AgentExecutor(ScriptedAgent("writer", ["draft one", "draft two", "draft three"]))
    editor = AgentExecutor(
        ScriptedAgent("editor", ["edited one", "edited two", "edited three"]),
        output_response=True,
    )
    return WorkflowBuilder(writer, name="chain").add_edge(writer, editor).build()


def build_publisher() -> Workflow:
    """One agent that asks before publishing, then answers."""
    writer = AgentExecutor(
        ScriptedAgent("writer", [PUBLISH, "published", "second article"]), output_response=True
    )
    return WorkflowBuilder(writer, name="publisher").build()


def history_texts(session: AgentSession) -> list[str]:
    """``role:text`` per message, with function results as ``tool:<call id>=<result>``."""
    lines = []
    for message in get_history(session):
        results = [c for c in message.contents if isinstance(c, FunctionResultContent)]
        text = ",".join(f"{r.call_id}={r.result}" for r in results) or message.text
        lines.append(f"{message.role}:{text}")
    return lines


class AskTwiceAgent(BaseAgent):
    """Asks two questions at once, then reports both answers."""

    async def _respond(self, messages: list[ChatMessage], session: AgentSession) -> AgentResponse:
        answers = {
            c.call_id: c.result
            for m in messages
            for c in m.contents
            if isinstance(c, FunctionResultContent)
        }
        if answers:
            reply = ChatMessage("assistant", f"title={answers['title']} tone={answers['tone']}")
        else:
            reply = ChatMessage(
                "assistant",
                [
                    UserInputRequestContent("title", "title?"),
                    UserInputRequestContent("tone", "tone?"),
                ],
            )
        append_history(session, [*messages, reply])
        return AgentResponse(messages=[reply], author_name=self.name)


class BarrierAgent(BaseAgent):
    """Echoes the input, but only once ``barrier`` has been reached by every run."""

    def __init__(self, name: str, barrier: asyncio.Barrier) -> None:
        super().__init__(name)
        self._barrier = barrier

    async def _respond(self, messages: list[ChatMessage], session: AgentSession) -> AgentResponse:
        await asyncio.wait_for(self._barrier.wait(), 10)
        reply = ChatMessage("assistant", "echo " + " ".join(m.text for m in messages))
        append_history(session, [*messages, reply])
        return AgentResponse(messages=[reply], author_name=self.name)


class WordStreamingAgent(BaseAgent):
    """Streams ``"echo <input>"`` one word per update; records the turn once it is complete."""

    async def _respond(self, messages: list[ChatMessage], session: AgentSession) -> AgentResponse:
        return AgentResponse.from_updates([u async for u in self._stream(messages, session)])

    async def _stream(
        self, messages: list[ChatMessage], session: AgentSession
    ) -> AsyncIterator[AgentResponseUpdate]:
        words = ["echo", *" ".join(m.text for m in messages).split()]
        for index, word in enumerate(words):
            yield AgentResponseUpdate((TextContent(word if index == 0 else " " + word),))
        reply = ChatMessage("assistant", " ".join(words))
        append_history(session, [*messages, reply])


def run_fresh(*argv: str) -> dict[str, Any]:
    """Run ``main(argv)`` in a fresh interpreter; its stdout is one JSON document."""
    result: dict[str, Any] = json.loads(run_main(__file__, *argv))
    return result


async def _chain_turn(root: str, checkpoint_id: str, message: str) -> dict[str, Any]:
    storage = FileCheckpointStorage(root)
    checkpoint = await storage.load(checkpoint_id)
    result = await build_chain().run(message, checkpoint=checkpoint)
    writer = checkpoint.head_snapshot.state["executor_states"]["writer"]["session"]
    return {
        "outputs": [o.text for o in result.get_outputs()],
        "session_id": writer.session_id,
        "history": history_texts(writer),
    }


async def _agent_turn(
    sessions: str, checkpoints: str, session_id: str, answer: str
) -> dict[str, Any]:
    store = FileSessionStore(sessions)
    session = await store.get(session_id)
    assert session is not None
    agent = build_publisher().as_agent(checkpoint_storage=FileCheckpointStorage(checkpoints))
    answer_message = ChatMessage("tool", [FunctionResultContent("publish", json.loads(answer))])
    response = await agent.run(answer_message, session=session)
    await store.set(session, expected_version=session.version)
    return {"text": response.text, "history": history_texts(session)}


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "chain-turn":
        out = asyncio.run(_chain_turn(*args))
    elif command == "agent-turn":
        out = asyncio.run(_agent_turn(*args))
    else:
        raise SystemExit(f"unknown command {command!r}")
    print(json.dumps(out))
