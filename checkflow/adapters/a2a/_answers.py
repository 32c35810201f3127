"""A continuation message as the answers to a paused task's requests.

A message with the ``taskId`` of an input-required task answers its pending requests:

- a request whose response type takes ``A2AMessage`` (the type, or a union holding it), when
  it is the only one waiting, gets the whole message: its ``messageId``, every part (file
  parts too, as bytes or URL) and its metadata;
- otherwise one data part mapping request ids to values answers those requests, and with
  exactly one request waiting any single text or data value answers it.

A file part reaches a workflow only through a request that takes ``A2AMessage``; sent to any
other it is refused (-32005) naming what the waiting requests take. A reply naming a
request the task already had answered is refused (``already_answered``), never a fork.
This module decides what a message answers only: it never calls the host.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from a2a.types import a2a_pb2
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    UnsupportedOperationError,
)

from checkflow.adapters.a2a._metadata import BRANCH_KEY, error_data, pending_ids
from checkflow.adapters.a2a._parts import input_value, message_from_proto, takes_message
from checkflow.adapters.a2a._view import TaskView
from checkflow.hosting import response_schema
from checkflow.workflows import PendingRequest

__all__ = ["already_answered", "answered_ids", "data_part", "responses_for"]


def already_answered(task_id: str, request_ids: Sequence[str], state: str | None = None
                     ) -> UnsupportedOperationError:
    """The refusal of a reply to requests the task had answered already."""
    ids = sorted(request_ids)
    where = f"task {task_id} is {state}" if state else f"task {task_id}"
    return UnsupportedOperationError(
        message=f"{where}: request(s) {', '.join(ids)} were already answered; to "
                f"answer again from that pause, start a new task with metadata "
                f"checkflow.{BRANCH_KEY} naming its snapshot",
        data=error_data(reason="already_answered", request_ids=ids))


def answered_ids(view: TaskView, message: a2a_pb2.Message) -> list[str]:
    """The request ids the message's data part names that an earlier pause asked and that
    no longer wait (a late reply)."""
    data = data_part(message)
    if data is None:
        return []
    asked = {rid for turn in view.turns for rid in turn.pending_requests}
    return sorted((set(data) & asked) - set(pending_ids(view.task)))


def data_part(message: a2a_pb2.Message) -> dict[str, Any] | None:
    """The message's one data part, when it is a JSON object."""
    data = [p.data for p in message_from_proto(message).parts if p.kind == "data"]
    return data[0] if len(data) == 1 and isinstance(data[0], dict) else None


def _has_file(message: a2a_pb2.Message) -> bool:
    return any(part.WhichOneof("content") in ("raw", "url") for part in message.parts)


def _what_they_take(requests: Mapping[str, PendingRequest], ids: Sequence[str]) -> str:
    takes = [f"{rid} takes {_schema_text(requests.get(rid))}" for rid in ids]
    return "; ".join(takes)


def _schema_text(request: PendingRequest | None) -> str:
    if request is None:
        return "an unknown type"
    if takes_message(request.response_type):
        return "the whole message (A2AMessage), when it is the only request waiting"
    schema = getattr(request, "response_schema", None)
    if not isinstance(schema, dict):
        schema = response_schema(request.response_type)
    text = json.dumps(schema, separators=(",", ":"))
    return f"JSON Schema {_cut(text)}" if schema else "any JSON value"


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _file_refused(task_id: str, requests: Mapping[str, PendingRequest], ids: Sequence[str]
                  ) -> ContentTypeNotSupportedError:
    return ContentTypeNotSupportedError(
        message=f"task {task_id} cannot take a file part: {_what_they_take(requests, ids)}. "
                f"A file part answers a request only when it is the one waiting and its "
                f"response type is checkflow.adapters.a2a.A2AMessage",
        data=error_data(reason="file_part_not_accepted", request_ids=list(ids)))


def responses_for(view: TaskView, message: a2a_pb2.Message) -> dict[str, Any]:
    """The host ``responses`` a continuation message carries for a paused task."""
    task = view.task
    waiting = pending_ids(task)
    requests = view.last.pending_requests
    late = answered_ids(view, message)
    if late:
        raise already_answered(task.id, late)
    if len(waiting) == 1 and takes_message(getattr(requests.get(waiting[0]), "response_type",
                                                   None)):
        return {waiting[0]: message_from_proto(message)}
    if _has_file(message):
        raise _file_refused(task.id, requests, waiting)
    data = data_part(message)
    if data is not None and set(data) & set(waiting):
        unknown = sorted(set(data) - set(waiting))
        if unknown:
            raise InvalidParamsError(
                message=f"task {task.id} has no pending request {unknown[0]!r} "
                        f"(pending: {', '.join(waiting)})")
        return dict(data)
    if len(waiting) == 1:
        return {waiting[0]: input_value(message, whole_message=False)}
    raise InvalidParamsError(
        message=f"task {task.id} waits for responses to {', '.join(waiting)}: send one data "
                f"part mapping request ids to values")
