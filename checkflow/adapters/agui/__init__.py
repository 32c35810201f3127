"""AG-UI 1.0: serve a host (any ``checkflow.hosting.Host``) to AG-UI clients over SSE.

``create_app(host, adapters=[AGUIAdapter()])`` (or ``serve --adapters agui``) mounts
``POST /agui``: the body is a ``RunAgentInput``, the answer an SSE stream of AG-UI events.
Needs the ``agui`` extra (``ag-ui-protocol`` 1.0.x).

The rules, which clients can rely on:

- **Ids.** ``threadId`` IS the host conversation id, scoped by the request's principal, so a
  thread paused over AG-UI is the conversation ``/v1/conversations/{threadId}`` of the native
  API (inspect it, or answer it there, and vice versa). ``threadId`` and ``runId`` are echoed
  exactly as sent; the run id is not stored.
- **Input and de-duplication.** Clients resend the whole history. The adapter keeps, per
  thread, the transcript of every message the thread took in or produced (in the host's
  adapter records, ``host.records("agui")``: durable in the host's session store and shared by
  every process using it). Only messages whose ids are not in it are new. For a chat-shaped
  start (``HostDescription.chat_input``) the new messages become the ``message``, a list of
  ``ChatMessage``; otherwise the text of the last new user message is, converted by the host to
  the start executor's input type. A run that fails records nothing, so its input stays new.
- **Stream.** ``RUN_STARTED`` (``protocolVersion: "1.0"``), balanced ``STEP_*`` per
  superstep, text outputs (``str``, ``ChatMessage``, agent responses; agent deltas live) as
  ``TEXT_MESSAGE_*``, other outputs as ``CUSTOM`` ``checkflow:output``, the shared state as
  ``STATE_SNAPSHOT``, ``MESSAGES_SNAPSHOT``, then ``RUN_FINISHED`` with ``success``,
  ``interrupt`` or ``cancelled``. Nothing after it; ``: ping`` comments while idle.
- **Interrupts.** One per pending request: ``id`` = request id, ``reason`` ``input_required``,
  ``responseSchema`` = the response type's JSON Schema, ``message`` from the request data's
  text, ``metadata.checkflow`` = ``{requestData, sourceExecutorId, resumeToken}``. A run with
  no new messages and no ``resume`` replays the thread: its snapshot and open interrupts.
- **Resume.** ``resume[]`` answers open interrupts (``status: "cancelled"`` answers
  ``RequestCancelled()``). Each breach is ``RUN_STARTED`` + ``RUN_ERROR`` with its own code,
  commits nothing and leaves the interrupts answerable: ``resume_required`` (new messages, no
  resume), ``resume_incomplete``, ``unknown_interrupt``, ``duplicate_interrupt``,
  ``input_with_resume``, ``invalid_resume_payload``. Resending a resume already applied is
  ``already_resolved`` (the handler never runs twice). A resume whose run fails is not
  consumed: sending it again works.
- **Branching.** ``forwardedProps.checkflow.fromSnapshot`` and ``.resumeToken``
  (``{checkpointId, snapshotId}``) go to ``host.run``; a stale token is ``stale_resume_token``.
- **Errors.** Before the stream: 415 media type, 400 malformed JSON, 422 schema (names the
  field), 401 no principal, 409 busy thread (at once, never queued). After it opens: a
  ``RUN_ERROR`` (``workflow_failed`` and others), the checkpoint at its last good snapshot. A
  client that disconnects cancels the run at the next superstep boundary.
"""

from __future__ import annotations

try:
    import ag_ui.core  # noqa: F401  (the extra's presence, checked once)
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "checkflow.adapters.agui needs the agui extra: pip install 'checkflow[agui]'"
    ) from exc

from checkflow.adapters.agui._adapter import AGUIAdapter

__all__ = ["AGUIAdapter", "default_adapter"]


def default_adapter() -> AGUIAdapter:
    """The adapter ``serve --adapters agui`` mounts: ``AGUIAdapter()`` at ``/agui``."""
    return AGUIAdapter()
