"""An agent chain: a writer agent hands its draft to an editor agent, each an ``AgentExecutor``.

Shows: each agent's ``AgentSession`` lives in the snapshot (``executor_states[<id>]["session"]``),
so a second run on the same checkpoint continues both conversations. The agents are
``ScriptedAgent``s (deterministic, no network); with ``OPENAI_API_KEY`` set the same chain also
runs with ``OpenAIChatAgent``s (``OPENAI_MODEL``, default ``gpt-4o-mini``; ``OPENAI_BASE_URL``
for a compatible endpoint).

Run it: ``python samples/agent_chain.py``. It writes nothing (the checkpoint is in memory), so
every run starts afresh.
"""

from __future__ import annotations

import asyncio
import os

from checkflow import AgentExecutor, ScriptedAgent, WorkflowBuilder
from checkflow.agents import Agent


def build(writer: Agent, editor: Agent):
    first, second = AgentExecutor(writer), AgentExecutor(editor, output_response=True)
    return WorkflowBuilder(first, name="chain").add_edge(first, second).build()


async def run_chain(writer: Agent, editor: Agent) -> list[str]:
    workflow = build(writer, editor)
    checkpoint = workflow.create_checkpoint()
    texts = []
    for topic in ("owls", "bats"):
        result = await workflow.run(f"Write one sentence about {topic}.", checkpoint=checkpoint)
        texts += [r.text for r in result.get_outputs()]
    sessions = checkpoint.head_snapshot.state["executor_states"]
    print("editor turns kept in the snapshot:",
          len(sessions[editor.name]["session"].state["messages"]))
    return texts


async def main() -> list[str]:
    scripted = await run_chain(
        ScriptedAgent("writer", ["Owls fly at night.", "Bats hang upside down."]),
        ScriptedAgent("editor", ["Owls fly silently at night.", "Bats sleep upside down."]))
    print("scripted:", scripted)
    if os.environ.get("OPENAI_API_KEY"):
        from checkflow.agents import OpenAIChatAgent

        model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
        base_url = os.environ.get("OPENAI_BASE_URL")
        live = await run_chain(
            OpenAIChatAgent(model, name="writer", base_url=base_url,
                            instructions="You write one plain sentence."),
            OpenAIChatAgent(model, name="editor", base_url=base_url,
                            instructions="You tighten the sentence you are given."))
        print("openai:", live)
    return scripted


if __name__ == "__main__":
    asyncio.run(main())
