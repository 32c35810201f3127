"""Foundry hosted agents: the OpenAI Responses protocol over a checkflow host.

``create_app(host, adapters=[FoundryAdapter()])`` (or ``serve --adapters foundry``) serves
``POST /responses``, ``GET|DELETE /responses/{id}``, ``GET /responses/{id}/input_items``,
``POST /responses/{id}/cancel`` and ``GET /readiness`` at the server root, on Starlette and
msgspec alone (the ``foundry`` extra).

How the protocol maps onto conversations and checkpoints:

- Every response is stored (``store`` defaults to true) as a record in
  ``host.records("foundry")``: the host conversation it ran in, the snapshot it ended at, its
  principal, status, output, input items and its events. Any process sharing the stores can
  retrieve or continue it; another principal's response id is 404.
- A new response runs in: the conversation of ``previous_response_id`` (continuing from that
  response's snapshot: the head continues, an older snapshot is branched from, and both
  branches stay retrievable and answerable); else the ``conversation`` named (its head
  advances; a request while it runs gets 409, never queued); else, in the container
  (``container=True``), the ``x-agent-session-id`` header's conversation; else a new
  conversation ``conv_...``. Every Response shows ``conversation.id``: the same id the
  native API serves at ``/v1/conversations/{id}`` (snapshots included).
  ``conversation`` together with ``previous_response_id`` is a 400.
- Input: a string (or one user message) is the workflow's message, converted by the host to
  the start executor's type; a chat workflow or agent gets ``list[ChatMessage]`` with
  ``instructions`` as a leading system message (for other workflows ``instructions`` is only
  echoed back).
- Outputs are assistant messages (a string as is, anything else as JSON). Each pending
  request is a ``function_call`` item named ``request_info`` whose ``call_id`` is the request
  id (the same in every response that lists it) and whose ``arguments`` are the JSON
  ``{"request_id", "data", "response_schema"}``; the response is ``completed``.
- A ``function_call_output`` (output a string or text parts) answers a call: an output that
  is valid JSON is parsed first and converted to the request's type, and if that does not
  fit, the text itself is tried (so ``"true"`` answers a boolean request and ``"42"`` a
  string one); one that fits neither is a 400 naming the call. An
  ``mcp_approval_response`` whose ``approval_request_id`` is a call id answers it with its
  boolean (no ``mcp_approval_request`` items are emitted). Answering some of several calls
  is accepted: the rest are listed again with the same call ids. A reply to a call that is
  not pending in that response, the same call twice, or replies mixed with new messages are
  a 400 ``invalid_request_error`` naming the call ids, and nothing is committed.
- ``store: false``: nothing is recorded, so the response cannot be retrieved (404) or
  continued. ``background: true`` (requires ``store``) returns ``in_progress`` at once;
  ``GET`` shows progress, ``POST .../cancel`` cancels through ``Host.cancel`` (status
  ``cancelled``; the conversation keeps its last good head), ``GET ?stream=true&
  starting_after=N`` replays the events after N (re-derived from the host's run log through
  ``Host.subscribe`` while it runs, then from the stored events) and follows live ones.
  A cancelled stream ends with ``response.failed`` carrying status ``cancelled``.
- Errors are ``{"error": {"message", "type", "param", "code"}}``; a run that fails is a
  ``failed`` Response (or ``response.failed``) with an ``error`` object, its conversation at
  its last committed snapshot. Refusals are decided before the host runs anything, so none
  creates a session or a checkpoint.
- With an ``AgentHost`` (no checkpoints) a ``previous_response_id`` continues the agent's
  conversation; there is no snapshot to branch from.
"""

from __future__ import annotations

from checkflow.adapters.foundry._adapter import (
    SESSION_HEADER,
    USER_HEADER,
    FoundryAdapter,
    header_principal,
)

__all__ = ["SESSION_HEADER", "USER_HEADER", "FoundryAdapter", "default_adapter",
           "header_principal"]


def default_adapter() -> FoundryAdapter:
    """The adapter ``serve --adapters foundry`` mounts: ``FoundryAdapter()``."""
    return FoundryAdapter()
