"""The names checkflow writes into A2A's JSON, and reads from it: camelCase, as A2A's are.

What the adapter writes:

- task (and status update) metadata ``checkflow``: ``conversationId``,
  ``pendingRequestIds`` and ``resumeToken`` (``checkpointId``, ``snapshotId``; ``null`` once
  nothing waits);
- the data part of a paused task's status message: ``pendingRequests``, each
  ``requestId``, ``data``, ``responseSchema`` and ``sourceExecutorId`` (``data`` and the
  schema are the workflow's own values, passed as they are), and ``takesMessage: true`` for
  a request answered by the whole next message (its response type takes ``A2AMessage``; its
  ``responseSchema`` then only says so, as any message is its answer), and ``tool``
  (``kind``, ``toolName``, ``callId``, ``arguments``, ``description``) for a request that
  waits on a tool call (``_tools``);
- the ``data`` of the errors it raises (``reason``, ``requestIds``, ``waitingTaskId``,
  ``retryAfter``, ...).

What it reads from a client: ``metadata.checkflow.fromSnapshot`` (the explicit branch).
This module names and converts only: it never decides a protocol rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from a2a.types import a2a_pb2

from checkflow.adapters.a2a._parts import python_value, takes_message
from checkflow.adapters.a2a._tools import tool_view
from checkflow.hosting import ResumeToken, pending_view
from checkflow.workflows import PendingRequest

__all__ = ["BRANCH_KEY", "META_KEY", "camel", "client_meta", "error_data", "pending_data",
           "pending_ids", "resume_token_of", "task_metadata"]

META_KEY = "checkflow"
"""The metadata key under which every name below lives."""

BRANCH_KEY = "fromSnapshot"
"""The snapshot a message without ``taskId`` branches from (``metadata.checkflow``)."""

_CONVERSATION = "conversationId"
_PENDING_IDS = "pendingRequestIds"
_TOKEN = "resumeToken"
_PENDING = "pendingRequests"
_TAKES_MESSAGE = "takesMessage"
_TOOL = "tool"
_WHOLE_MESSAGE = {"description": "the whole next A2A message sent with this taskId answers "
                                 "this request: any parts, files included"}


def camel(name: str) -> str:
    """``snake_case`` -> ``snakeCase`` (a name already camelCase is unchanged)."""
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _camel_keys(value: Mapping[str, Any]) -> dict[str, Any]:
    return {camel(key): item for key, item in value.items()}


def task_metadata(context_id: str, pending: Sequence[str], token: ResumeToken | None
                  ) -> dict[str, Any]:
    """The ``checkflow`` metadata of a task that waits for ``pending`` (or for nothing)."""
    return {META_KEY: {
        _CONVERSATION: context_id, _PENDING_IDS: list(pending),
        _TOKEN: ({"checkpointId": token.checkpoint_id, "snapshotId": token.snapshot_id}
                 if token is not None else None)}}


def pending_data(pending: Mapping[str, PendingRequest]) -> dict[str, Any]:
    """The data part of a paused task's status message: its pending requests."""
    return {_PENDING: [_pending(request) for request in pending.values()]}


def _pending(request: PendingRequest) -> dict[str, Any]:
    view = _camel_keys(pending_view(request))
    if takes_message(request.response_type):
        # answered by the whole next message, files included: not by a value of a schema
        view[_TAKES_MESSAGE] = True
        view["responseSchema"] = dict(_WHOLE_MESSAGE)
    tool = tool_view(request)
    if tool is not None:
        view[_TOOL] = tool
    return view


def error_data(**facts: Any) -> dict[str, Any]:
    """An error's ``data``: the facts named in Python, the keys as A2A spells them."""
    return _camel_keys(facts)


def _task_meta(task: a2a_pb2.Task) -> dict[str, Any]:
    meta = python_value(task.metadata).get(META_KEY) if task.HasField("metadata") else None
    return meta if isinstance(meta, dict) else {}


def pending_ids(task: a2a_pb2.Task) -> list[str]:
    """The request ids a paused task waits for (from its metadata)."""
    return [str(i) for i in _task_meta(task).get(_PENDING_IDS) or []]


def resume_token_of(task: a2a_pb2.Task) -> ResumeToken | None:
    """The resume token a paused task carries, or ``None``."""
    token = _task_meta(task).get(_TOKEN)
    if not isinstance(token, dict):
        return None
    return ResumeToken(str(token["checkpointId"]), str(token["snapshotId"]))


def client_meta(message: a2a_pb2.Message) -> dict[str, Any]:
    """What a client's message says under ``metadata.checkflow`` (empty when nothing)."""
    if not message.HasField("metadata"):
        return {}
    meta = python_value(message.metadata).get(META_KEY)
    return meta if isinstance(meta, dict) else {}
