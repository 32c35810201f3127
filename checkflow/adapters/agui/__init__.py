"""AG-UI 1.0: serve a host (any ``checkflow.hosting.Host``) to AG-UI clients over SSE.

``create_app(host, adapters=[AGUIAdapter()])`` (or ``serve --adapters agui``) mounts
``POST /agui``: the body is a ``RunAgentInput``, the answer an SSE stream of AG-UI events.
Needs the ``agui`` extra (``ag-ui-protocol`` 1.0.x).

The rules, which clients can rely on:

- **Ids.** ``threadId`` IS the host conversation id, scoped by the request's principal, so a
  thread paused over AG-UI is the conversation ``/v1/conversations/{threadId}`` of the native
  API (inspect it, or answer it there, and vice versa). ``threadId`` and ``runId`` are echoed
  exactly as sent; the ``runId`` is the turn's idempotency key.
- **The thread is the checkpoint's lineage.** No adapter record: each turn is run with its
  origin (``runId`` and new messages), committed with its first snapshot, and the transcript,
  seen message ids and issued interrupts are rendered from ``Host.turns``. So a native cancel,
  answer or ``DELETE``, a branch or a crash shows over AG-UI exactly as the checkpoint has it.
  Only messages after the last one on the lineage are new; for a chat-shaped start
  (``HostDescription.chat_input``) they become a list of ``ChatMessage``, otherwise the text of
  the last new user message is the input.
- **Retries.** A retry of a committed run (same ``runId``) replays its outcome and runs no
  handler; a retry of a running one attaches to it; ``run_id_reused`` if it brings new input.
- **Stream.** ``RUN_STARTED`` (``protocolVersion: "1.0"``), balanced ``STEP_*`` per
  superstep, text outputs (``str``, ``ChatMessage``, agent responses; agent deltas live) as
  ``TEXT_MESSAGE_*``, other outputs as ``CUSTOM`` ``checkflow:output``, the shared state as a
  ``STATE_SNAPSHOT`` first and then ``STATE_DELTA`` (RFC 6902) per committed change when
  smaller, ``MESSAGES_SNAPSHOT``, then ``RUN_FINISHED`` with ``success``, ``interrupt`` or
  ``cancelled``. Nothing after it; ``: ping`` comments while idle. Every event carries
  ``timestamp`` (ms since the epoch).
- **Shared state.** ``AGUIAdapter(writable_state={key: type})`` lets ``RunAgentInput.state``
  write those keys (a changed value, decoded as its type; else 422 ``invalid_state``), in the
  turn's input commit; without it ``state`` is ignored.
- **Interrupts.** One per pending request: ``id`` = request id, ``reason`` ``input_required``,
  ``responseSchema`` = the response type's JSON Schema, ``message`` from the request data's
  text, ``metadata.checkflow`` = ``{requestData, sourceExecutorId, resumeToken}``. A tool
  call's approval or a client's tool is ``reason`` ``tool_call`` with its ``toolCallId``, the
  call in ``message`` and ``metadata.checkflow.toolCall``, shown as ``TOOL_CALL_*`` first.
- **Tools.** An agent's streamed calls are ``TOOL_CALL_START/ARGS/END`` (an assistant message
  whose id is the call id), results of tools run here ``TOOL_CALL_RESULT``. ``tools`` are
  written as ``ClientTool``s to the shared state (``CLIENT_TOOLS_KEY``, never shown in the
  state events) with every run's input; a ``tool`` message answers an open client-tool
  interrupt (``unknown_tool_call`` for a call never made, ``conflicting_answer`` when a
  ``resume`` entry for it says otherwise).
- **Reconnect.** A run with no new messages and no ``resume`` follows the turn running now (from
  any process: another one sees committed supersteps, not steps or token deltas) to its end,
  then tells the thread: its snapshot and open interrupts, ``turn_failed`` if its last turn
  failed or died, or ``cancelled``.
- **Resume.** ``resume[]`` answers open interrupts (``status: "cancelled"`` answers
  ``RequestCancelled()``). Each breach is ``RUN_STARTED`` + ``RUN_ERROR`` with its own code,
  commits nothing and leaves the interrupts answerable: ``resume_required`` (new messages, no
  resume), ``resume_incomplete``, ``unknown_interrupt``, ``duplicate_interrupt``,
  ``input_with_resume``, ``invalid_resume_payload``. A late reply (a resume of an interrupt
  no longer open, under a new ``runId``) is ``already_resolved``, never a silent fork. A
  resume whose run fails is not consumed: sending it again works.
- **Branching.** ``forwardedProps.checkflow.fromSnapshot`` and ``.resumeToken``
  (``{checkpointId, snapshotId}``) go to ``host.run``; a stale token is ``stale_resume_token``.
- **Errors.** Before the stream: 415 media type, 400 malformed JSON, 422 schema (names the
  field), 401 no principal, 409 busy thread (at once, never queued). After it opens: a
  ``RUN_ERROR`` (``workflow_failed`` and others), the checkpoint at its last good snapshot. A
  client that disconnects, a native cancel and a shutdown end the turn at its next superstep
  boundary (``RUN_FINISHED`` ``cancelled``).
"""

from __future__ import annotations

from checkflow._extras import requires_extra

with requires_extra("agui", "checkflow.adapters.agui"):
    from checkflow.adapters.agui._adapter import AGUIAdapter

__all__ = ["AGUIAdapter", "default_adapter"]


def default_adapter() -> AGUIAdapter:
    """The adapter ``serve --adapters agui`` mounts: ``AGUIAdapter()`` at ``/agui``."""
    return AGUIAdapter()
