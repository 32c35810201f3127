"""``usage`` over Responses: the agent's own token counts, zeros when nothing reported any.

An ``OpenAIChatAgent`` talks to a small Chat Completions service on loopback (it reports
fixed counts) and is served by an ``AgentHost`` with the Foundry adapter; the ``openai``
client reads the responses. A workflow that runs no model reports nothing: ``usage`` is the
zeros placeholder in every body and event (``null`` would fail Foundry's own models).
"""

from __future__ import annotations

import json
from typing import Any

from foundry_schema import assert_well_formed, validate_event, validate_response
from foundry_serving import serving
from openai import OpenAI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from checkflow.adapters.foundry import FoundryAdapter
from checkflow.adapters.foundry._objects import NO_USAGE
from checkflow.agents import OpenAIChatAgent
from checkflow.hosting import AgentHost, WorkflowHost, create_app
from checkflow.workflows import Executor, WorkflowBuilder, WorkflowContext, handler

SERVICE_USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
                 "prompt_tokens_details": {"cached_tokens": 3},
                 "completion_tokens_details": {"reasoning_tokens": 2}}
RESPONSES_USAGE = {"input_tokens": 11,
                   "input_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 0},
                   "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 2},
                   "total_tokens": 18}


async def _completions(request: Request) -> Response:
    """Chat Completions answering "hello" and reporting ``SERVICE_USAGE`` (streamed: in a
    last chunk, only when the request asks for it with ``stream_options.include_usage``)."""
    body = await request.json()
    if not body.get("stream"):
        return JSONResponse({"choices": [{"message": {"role": "assistant", "content": "hello"},
                                          "finish_reason": "stop"}], "usage": SERVICE_USAGE})
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"content": "hel"}}]},
        {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]}]
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({"choices": [], "usage": SERVICE_USAGE})
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return Response(text, media_type="text/event-stream")


_service = Starlette(routes=[Route("/v1/chat/completions", _completions, methods=["POST"])])


def _client(url: str) -> OpenAI:
    return OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=30)


def test_an_agents_reported_tokens_are_the_responses_usage() -> None:
    with serving(_service) as service:
        agent = OpenAIChatAgent("gpt-test", base_url=f"{service}/v1", api_key="k")
        with serving(create_app(AgentHost(agent), adapters=[FoundryAdapter()])) as url:
            client = _client(url)
            body = client.responses.with_raw_response.create(input="hi").http_response.json()
            validate_response(body)
            assert body["usage"] == RESPONSES_USAGE and body["status"] == "completed"
            events = [e.to_dict() for e in client.responses.create(input="hi", stream=True)]
            assert_well_formed(events)
            assert [e["response"]["usage"] for e in events if "response" in e] == [
                NO_USAGE, NO_USAGE, RESPONSES_USAGE]  # created, in_progress: not counted yet
            again = client.responses.retrieve(events[-1]["response"]["id"])
            assert again.usage is not None and again.usage.total_tokens == 18
            assert again.usage.input_tokens_details.cached_tokens == 3


class _Echo(Executor):
    @handler
    async def echo(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.yield_output(text)


def test_a_workflow_that_runs_no_model_shows_zero_usage_everywhere() -> None:
    workflow = WorkflowBuilder(start_executor=_Echo("echo"), name="echo").build()
    with serving(create_app(WorkflowHost(workflow), adapters=[FoundryAdapter()])) as url:
        client = _client(url)
        events = [e.to_dict() for e in client.responses.create(input="hi", stream=True)]
        for event in events:
            validate_event(event)
        assert [e["response"]["usage"] for e in events if "response" in e] == [NO_USAGE] * 3
        stored = client.responses.with_raw_response.retrieve(events[-1]["response"]["id"])
        assert stored.http_response.json()["usage"] == NO_USAGE
        assert NO_USAGE["total_tokens"] == NO_USAGE["input_tokens"] == 0
