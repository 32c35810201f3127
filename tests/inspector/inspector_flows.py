"""A workflow whose every value is hostile markup (``serve inspector_flows:workflow``).

The inspector must show it all as text: each string, if it ever became markup or a URL, would
set ``window.__xss`` (to a number saying which one did). It is in the executor's state (as
values and as keys), in the messages, in the outputs and in a pending request's data; the
second executor's id and the workflow's name are hostile too, so the graph draws them.
"""

from __future__ import annotations

from checkflow.workflows import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

SCRIPT = "<script>window.__xss=1</script>"
ATTRIBUTE = '"><img src=x onerror="window.__xss=2">'
URL = "javascript:window.__xss=3"
PAYLOADS = [SCRIPT, ATTRIBUTE, URL]
# the conversation's id (percent-encoded in every URL) and the graph's hostile names
CONVERSATION_ID = "<img src=x onerror=window.__xss=4>"
KEY = "<img src=x onerror=window.__xss=5>"
EXECUTOR_ID = '"><svg onload="window.__xss=6">'
NAME = "<script>window.__xss=7</script>"
EVERY = [*PAYLOADS, CONVERSATION_ID, KEY, EXECUTOR_ID, NAME]


class Hoard(Executor):
    """Keeps every payload in its state, under a hostile key too, and passes the text on."""

    @handler
    async def hoard(self, text: str, ctx: WorkflowContext[str]) -> None:
        ctx.executor_state["payloads"] = list(PAYLOADS)
        ctx.executor_state[KEY] = SCRIPT
        ctx.executor_state["link"] = URL
        await ctx.send_message(text)


class Ask(Executor):
    """Yields every payload and asks about them; the answer yields them again."""

    @handler
    async def ask(self, text: str, ctx: WorkflowContext) -> None:
        ctx.executor_state["last"] = ATTRIBUTE
        for payload in PAYLOADS:
            await ctx.yield_output(payload)
        await ctx.request_info({"question": SCRIPT, "draft": ATTRIBUTE, "link": URL,
                                ATTRIBUTE: text}, response_type=bool)

    @response_handler
    async def answered(self, request: dict, approved: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output({"approved": approved, "draft": request["draft"],
                                "link": URL})


hoard, ask = Hoard(id="hoard"), Ask(id=EXECUTOR_ID)
workflow = WorkflowBuilder(start_executor=hoard, name=NAME).add_edge(hoard, ask).build()
