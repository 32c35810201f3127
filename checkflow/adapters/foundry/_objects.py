"""Response objects and output items, complete as the Responses schema requires them.

Everything a client sees in a body or an event is built here from plain values, so the shape
of a Response (every required field, ``None`` where it does not apply) is decided once. Ids
are random where they name something new and derived where they must be reproducible (item
ids come from the response id and the output index, so a replayed stream names the same
items). This module must never call the host or touch storage.
"""

from __future__ import annotations

import functools
import json
import operator
import secrets
from collections.abc import Iterable
from typing import Any

from checkflow.agents import AgentResponse, UsageDetails

__all__ = [
    "NO_USAGE",
    "REQUEST_INFO",
    "SERVER_LABEL",
    "approval_item",
    "function_call_item",
    "item_id",
    "message_item",
    "new_id",
    "request_arguments",
    "response_object",
    "usage_of",
]

REQUEST_INFO = "request_info"
"""The function name under which a workflow's pending requests are shown."""


def _usage(usage: UsageDetails) -> dict[str, Any]:
    return {"input_tokens": usage.input_tokens,
            # cache writes: Chat Completions reports none (the openai types require the key)
            "input_tokens_details": {"cached_tokens": usage.cached_input_tokens,
                                     "cache_write_tokens": 0},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            "total_tokens": usage.total_tokens}


NO_USAGE = _usage(UsageDetails())
"""The ``usage`` of a response nothing reported tokens for (or still running): zeros.

OpenAI shows ``null`` while a response runs; Foundry's host leaves ``usage`` out while it
runs and on ``GET``, and sends ``null`` in a stream's terminal event. But Foundry's own models
type ``usage`` as an object (``null`` fails them) and openresponses-types requires the key,
so the one value all three accept is an object: zeros, every field present."""


def usage_of(outputs: Iterable[Any]) -> dict[str, Any]:
    """The Responses ``usage`` of a turn: the tokens its agents reported, added up (every
    ``AgentResponse`` among its outputs that carries a usage), else ``NO_USAGE``."""
    reported = [o.usage for o in outputs if isinstance(o, AgentResponse)
                and o.usage is not None]
    if not reported:
        return NO_USAGE
    return _usage(functools.reduce(operator.add, reported))


def new_id(prefix: str) -> str:
    """A fresh opaque id such as ``resp_3f9c...`` (24 random bytes, hex)."""
    return f"{prefix}_{secrets.token_hex(24)}"


def item_id(response_id: str, output_index: int, kind: str = "msg") -> str:
    """The id of a response's output item at ``output_index``: the same on every replay."""
    return f"{kind}_{response_id.removeprefix('resp_')}_{output_index}"


def message_item(id: str, text: str, *, status: str = "completed") -> dict[str, Any]:
    """An assistant message with one ``output_text`` part (no part while still opening)."""
    content = [] if status == "in_progress" and not text else [
        {"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    return {"type": "message", "id": id, "status": status, "role": "assistant",
            "content": content}


def request_arguments(request_id: str, data: Any, response_schema: dict[str, Any]) -> str:
    """The JSON ``arguments`` of a ``request_info`` call: request id, data and answer schema."""
    return json.dumps({"request_id": request_id, "data": data,
                       "response_schema": response_schema}, separators=(",", ":"))


def function_call_item(
    id: str, call_id: str, arguments: str, *, name: str = REQUEST_INFO,
    status: str = "completed",
) -> dict[str, Any]:
    """A ``function_call`` item asking the client for a value: ``request_info`` for a
    workflow's request, the tool's own name for a client tool the model called."""
    return {"type": "function_call", "id": id, "call_id": call_id, "name": name,
            "arguments": arguments, "status": status}


SERVER_LABEL = "checkflow"
"""The ``server_label`` of an ``mcp_approval_request``: the workflow asks, not an MCP server."""


def approval_item(request_id: str, arguments: str, *, name: str = REQUEST_INFO
                  ) -> dict[str, Any]:
    """An ``mcp_approval_request`` item asking to approve request ``request_id`` (``name``:
    ``request_info``, or the tool a call waits to run); its ``id`` is the request id, which
    the ``mcp_approval_response`` names as ``approval_request_id``."""
    return {"type": "mcp_approval_request", "id": request_id, "server_label": SERVER_LABEL,
            "name": name, "arguments": arguments}


def response_object(
    *,
    id: str,
    created_at: int,
    status: str,
    model: str,
    output: list[dict[str, Any]],
    conversation_id: str | None,
    previous_response_id: str | None = None,
    instructions: str | None = None,
    metadata: dict[str, str] | None = None,
    store: bool = True,
    background: bool = False,
    completed_at: int | None = None,
    error: dict[str, Any] | None = None,
    incomplete_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    agent_reference: dict[str, Any] | None = None,
    agent_session_id: str | None = None,
) -> dict[str, Any]:
    """A complete Response object: every field the schema requires, in the OpenAI shape
    (``completed_at`` only on a completed one, as OpenAI and Foundry show it), with
    Foundry's ``agent_reference`` (``null`` when no agent is named: outside a container) and,
    in a container, its ``agent_session_id``."""
    body = {
        "id": id,
        "object": "response",
        "created_at": created_at,
        "completed_at": completed_at if status == "completed" else None,
        "status": status,
        "incomplete_details": ({"reason": incomplete_reason}
                               if incomplete_reason is not None else None),
        "model": model,
        "previous_response_id": previous_response_id,
        "instructions": instructions,
        "output": output,
        "error": error,
        "tools": [],
        "tool_choice": "auto",
        "truncation": "disabled",
        "parallel_tool_calls": False,
        "text": {"format": {"type": "text"}},
        "top_p": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "top_logprobs": 0,
        "temperature": 1.0,
        "reasoning": None,
        "usage": NO_USAGE if usage is None else usage,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "store": store,
        "background": background,
        "service_tier": "default",
        "metadata": metadata or {},
        "safety_identifier": None,
        "prompt_cache_key": None,
        "conversation": {"id": conversation_id} if conversation_id is not None else None,
        "agent_reference": agent_reference,
    }
    if agent_session_id is not None:
        body["agent_session_id"] = agent_session_id
    return body
