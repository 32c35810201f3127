"""Sequential and concurrent agent orchestrations (``SequentialBuilder``, ``ConcurrentBuilder``).

Shows: a sequential orchestration passes the conversation along, each agent seeing all that
was said before, and yields the whole conversation; a concurrent one asks every agent at once
and aggregates their replies (default: the list, in participant order). Both are ordinary
workflows: every step is a snapshot, and ``to_mermaid()`` draws them.

Run it: ``python samples/orchestrations.py``. It writes nothing (the checkpoints are in memory),
so every run starts afresh.
"""

from __future__ import annotations

import asyncio

from checkflow import ConcurrentBuilder, ScriptedAgent, SequentialBuilder
from checkflow.agents import AgentResponse


def summarize(replies: list[AgentResponse]) -> str:
    return " / ".join(f"{r.author_name}: {r.text}" for r in replies)


async def main() -> tuple[list[str], str]:
    sequential = SequentialBuilder([
        ScriptedAgent("researcher", ["Owls hunt at night."]),
        ScriptedAgent("writer", ["Night hunters: owls."]),
    ]).build()
    result = await sequential.run("Tell me about owls.")
    (conversation,) = result.get_outputs()
    lines = [f"{m.role}: {m.text}" for m in conversation]
    print("\n".join(lines))

    concurrent = ConcurrentBuilder([
        ScriptedAgent("optimist", ["It will be sunny."]),
        ScriptedAgent("pessimist", ["It will rain."]),
    ], aggregator=summarize).build()
    (summary,) = (await concurrent.run("Weather tomorrow?")).get_outputs()
    print(summary)
    print(concurrent.to_mermaid())
    return lines, summary


if __name__ == "__main__":
    asyncio.run(main())
