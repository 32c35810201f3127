"""Foundry hosted agents: the OpenAI Responses protocol over a checkflow host.

``create_app(host, adapters=[FoundryAdapter()])`` (or ``serve --adapters foundry``) serves
``POST /responses``, ``GET|DELETE /responses/{id}``, ``GET /responses/{id}/input_items``,
``POST /responses/{id}/cancel`` and ``GET /readiness`` at the server root, on Starlette and
msgspec alone (the ``foundry`` extra).

How the protocol maps onto conversations and checkpoints:

- A response is a hosted turn. Its id ``resp_<conversation>_<turn>`` names the conversation
  (base64url) and the turn; what the protocol shows beside the checkpoint (created time,
  model, ``previous_response_id``, instructions, metadata, ``store``, ``background``, the
  input items) is the turn's origin, committed with its first snapshot. Every view of a
  response is rendered from ``Host.find_turn``; no response record is written (``DELETE``
  leaves a tombstone in ``host.records("foundry")``). Another principal's id is 404.
- A new response runs in: the conversation of ``previous_response_id``, after that response,
  which must be the conversation's latest (409 ``previous_response_not_latest``) unless the
  client branches from its end with ``metadata={"checkflow.branch": "true"}``; else the
  ``conversation`` named (a request while it runs gets 409, never queued); else, in the
  container, the ``x-agent-session-id`` conversation; else, with an ``Idempotency-Key``, a
  conversation derived from the key; else a new ``conv_...``.
- A turn's idempotency key is the ``Idempotency-Key`` header, or for a reply its
  ``previous_response_id`` and the call ids it answers: a retry of a committed turn returns
  its response (nothing runs again), of a running one follows it to its end. The same key
  with another input is 409 (``already_answered``, ``idempotency_key_reused``); a reply to a
  call answered already is 409 ``already_answered`` and moves nothing.
- Input: a string (or one user message) is the workflow's message, converted by the host to
  the start executor's type; a chat workflow or agent gets ``list[ChatMessage]`` with
  ``instructions`` as a leading system message.
- Outputs are assistant messages (a string as is, anything else as JSON), then each pending
  request as a ``function_call`` item named ``request_info`` whose ``call_id`` is the request
  id and whose ``arguments`` are ``{"request_id", "data", "response_schema"}``, or, for an
  approval (a yes/no request, or an ``ApprovalRequest``), an ``mcp_approval_request`` whose
  ``id`` is the request id; a pause is ``completed``. ``function_call_output`` (JSON first,
  then the text as sent) and ``mcp_approval_response`` items answer calls.
- Tools: an agent's tool call waiting for approval is an ``mcp_approval_request`` named after
  the tool (its arguments as JSON), answered by ``mcp_approval_response`` (a
  ``ToolApproval``); the request's ``function`` tools are the client's own, written to the
  workflow's shared state (``CLIENT_TOOLS_KEY``) on every turn, and a call of one is a
  ``function_call`` named after it, answered by ``function_call_output``. Ids are the call ids.
- ``background: true`` returns ``in_progress`` once the engine accepted the input;
  ``GET ?stream=true&starting_after=N`` follows a running response (``Host.follow``: from
  another process at superstep granularity, without token deltas) or derives an ended one at
  once; ``POST .../cancel`` goes through ``Host.cancel`` (another process's owner notices
  within a second). A turn whose server died is ``failed``, saying so.
- Errors are ``{"error": {"message", "type", "param", "code"}}``; a run that fails is a
  ``failed`` Response with an ``error`` object, its conversation at its last good head.
"""

from __future__ import annotations

from checkflow._extras import requires_extra

with requires_extra("foundry", "checkflow.adapters.foundry"):
    from checkflow.adapters.foundry._adapter import (
        SESSION_HEADER,
        USER_HEADER,
        FoundryAdapter,
        header_principal,
    )
    from checkflow.adapters.foundry._approval import ApprovalRequest

__all__ = ["SESSION_HEADER", "USER_HEADER", "ApprovalRequest", "FoundryAdapter",
           "default_adapter", "header_principal"]


def default_adapter() -> FoundryAdapter:
    """The adapter ``serve --adapters foundry`` mounts: ``FoundryAdapter()``."""
    return FoundryAdapter()
