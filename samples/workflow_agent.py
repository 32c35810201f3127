"""A workflow as an agent (``workflow.as_agent()``), its conversation saved in a session.

Shows: the session holds a reference to the workflow's checkpoint; saved to a file session
store and loaded again (as another process would), it continues where it paused. A pending
request arrives as a ``FunctionCallContent(name="request_info")``; the answer goes back as a
``FunctionResultContent`` with the same call id.

Run it: ``python samples/workflow_agent.py`` (it writes ``./state``). A second run continues
the saved session ``trip-42`` (a second booking on the same checkpoint) instead of starting a
new one.
"""

from __future__ import annotations

import asyncio

from checkflow import (
    ChatMessage,
    Executor,
    FileCheckpointStorage,
    FileSessionStore,
    FunctionCallContent,
    FunctionResultContent,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


class Booker(Executor):
    @handler
    async def book(self, messages: list[ChatMessage], ctx: WorkflowContext) -> None:
        await ctx.request_info({"confirm": messages[-1].text}, response_type=bool)

    @response_handler
    async def confirmed(self, request: dict, ok: bool, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(f"booked: {request['confirm']}" if ok else "cancelled")


async def main(root: str = "./state") -> str:
    workflow = WorkflowBuilder(Booker(id="booker"), name="booking").build()
    agent = workflow.as_agent(name="booking",
                              checkpoint_storage=FileCheckpointStorage(f"{root}/checkpoints"))
    sessions = FileSessionStore(f"{root}/sessions")

    # the saved conversation when there is one (an earlier run's), a new one otherwise
    session = await sessions.get("trip-42") or agent.create_session(session_id="trip-42")
    reply = await agent.run("a table for two at eight", session=session)
    (call,) = [c for m in reply.messages for c in m.contents
               if isinstance(c, FunctionCallContent)]
    print("the agent asks:", call.name, call.arguments)
    await sessions.set(session)

    loaded = await sessions.get("trip-42")  # e.g. the next request, another process
    assert loaded is not None
    answer = ChatMessage("tool", [FunctionResultContent(call.call_id, True)])
    final = await agent.run(answer, session=loaded)
    await sessions.set(loaded)  # what the next run continues from
    print("the agent says:", final.text)
    return final.text


if __name__ == "__main__":
    asyncio.run(main())
