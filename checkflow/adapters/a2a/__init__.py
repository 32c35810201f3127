"""A2A 1.0 adapter: a checkflow host served over JSON-RPC and HTTP+JSON (extra ``a2a``).

``create_app(host, adapters=[A2AAdapter()])`` (or ``serve --adapters a2a``) serves the
SDK's JSON-RPC endpoint at ``/a2a`` (``/a2a/`` too, no redirect), its REST binding under
``/a2a/rest`` and the card at ``/.well-known/agent-card.json`` (``Cache-Control``,
``ETag``, ``Last-Modified``, 304s). The SDK's request handler,
dispatchers, ProtoJSON and error table do the protocol; our executor relays ``Host`` turns
and our task store derives every task from the host's turn records (no task record is kept),
so a restarted server or a second one sharing the storage serves the same tasks. The mapping
(docs/adapters/a2a.md has it whole):

- ``contextId`` is the host conversation id, scoped by principal: the native API serves it
  at ``/v1/conversations/{contextId}``. A client ``contextId`` that cannot be used (over 256
  characters, a ``/`` or a control character) is refused (-32602), never replaced; a message
  without one starts a new context.
- A message without ``taskId`` starts a new task: text parts become one ``str``, one data
  part its JSON value; a start executor declaring ``A2AMessage`` gets the whole message.
  While a task of that context awaits input, such a message is refused (-32004) naming the
  waiting task: it is never taken as the answer.
- A message with ``taskId`` (``contextId`` optional, and must match) continues an
  input-required task: its data part maps request ids to values (with one request pending,
  any single value answers it) -> ``host.run(responses=..., resume_token=...)``. A request
  whose response type takes ``A2AMessage``, waiting alone, gets the whole message (files
  too); a file part to any other is refused (-32005) naming what the requests take.
- Outputs become artifacts (``str`` text, ``bytes`` file, ``Artifact`` as given, else data);
  when the start takes ``A2AMessage``, a blocking first-call run whose only output is an
  ``A2AMessage`` is answered with that message. A completing turn's last ``A2AMessage``
  output is also the task's ``COMPLETED`` status message.
  A run that pauses ends ``INPUT_REQUIRED`` with the requests in the status message's data
  part and ``metadata.checkflow.resumeToken``; ``TaskRejected`` ends ``REJECTED``, any other
  failure ``FAILED``. A tool call waiting on an approval or on the client's own tool is
  such a pause, its request (the call id) carrying ``tool`` (kind, name, call id,
  arguments); ``{"approved": true}``, a denial, edited arguments or the tool's result answer.
- ``messageId`` is the turn's idempotency key: a retry answers the recorded task (nothing
  runs again), a retry of a running turn follows it. A reply to an answered request is
  refused (-32004 ``already_answered``); ``metadata.checkflow.fromSnapshot`` branches.
- ``CancelTask`` cancels through ``Host.cancel``; a cancelled input-required task's turns
  leave the conversation (its head goes back to before the task), so its requests go too.
- Push notifications (on by default): a task's push configs are created, read, listed and
  deleted over both bindings and kept per principal beside the conversation; every state
  change POSTs the task to each webhook (token, credentials), retried with backoff
  (``PushRetry``), delivered after a restart too. Webhook URLs must be http(s) and public
  unless allowed (``PushURLError`` -> -32602).
- Busy conversations and lost races are refused at once (-32004), never queued. The SDK's
  0.3 compatibility is off: a request without ``A2A-Version`` is 0.3 and gets -32009.
"""

from checkflow._extras import MissingExtraError, requires_extra
from checkflow.adapters.a2a._types import A2AMessage, A2APart, Artifact, TaskRejected

try:
    with requires_extra("a2a", "checkflow.adapters.a2a"):
        from checkflow.adapters.a2a._adapter import A2AAdapter, default_adapter
        from checkflow.adapters.a2a._deliver import TOKEN_HEADER, PushRetry
        from checkflow.adapters.a2a._push import PushPolicy, PushURLError
        from checkflow.adapters.a2a._store import A2ATaskStore
except MissingExtraError as exc:  # the types above stay usable; the rest says what is missing
    _missing = exc

    def __getattr__(name: str) -> object:
        if name in {"A2AAdapter", "A2ATaskStore", "PushPolicy", "PushRetry", "PushURLError",
                    "TOKEN_HEADER", "default_adapter"}:
            raise MissingExtraError(f"checkflow.adapters.a2a.{name}", "a2a",
                                    name=_missing.name) from _missing
        raise AttributeError(f"module 'checkflow.adapters.a2a' has no attribute {name!r}")

__all__ = ["TOKEN_HEADER", "A2AAdapter", "A2AMessage", "A2APart", "A2ATaskStore", "Artifact",
           "PushPolicy", "PushRetry", "PushURLError", "TaskRejected", "default_adapter"]
