"""A2A task ids, the principal a call carries, and the task states every module names.

A task id *names where its task is recorded*: the context (the host conversation) and the
``messageId`` of the message that started it, which is that turn's idempotency key. So a
``GetTask`` finds the task's turns from the id alone (``Host.find_turn`` by key, then the
conversation's lineage), with no index record beside the checkpoint, and a retried message
is the same task by construction. The id is opaque to clients: base64url of a JSON pair.
This module must never do I/O.
"""

from __future__ import annotations

import base64
import binascii
import json

from a2a.server.context import ServerCallContext
from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError

__all__ = ["MAX_ID", "PRINCIPAL_KEY", "TERMINAL", "check_message_id", "parse_task_id",
           "principal_of", "task_id_for"]

PRINCIPAL_KEY = "checkflow.principal"
"""Where the adapter's call-context builder puts the request's principal."""

TERMINAL = frozenset({a2a_pb2.TASK_STATE_COMPLETED, a2a_pb2.TASK_STATE_CANCELED,
                      a2a_pb2.TASK_STATE_FAILED, a2a_pb2.TASK_STATE_REJECTED})

MAX_ID = 256
"""The longest ``contextId`` or ``messageId`` taken (a task id holds both)."""

_PREFIX = "t-"


def principal_of(context: ServerCallContext) -> str | None:
    """The checkflow principal the call context carries (``None``: anonymous)."""
    principal = context.state.get(PRINCIPAL_KEY)
    return principal if isinstance(principal, str) else None


def check_message_id(message_id: str) -> None:
    """Refuse a ``messageId`` too long to be a key (it becomes part of the task id)."""
    if len(message_id) > MAX_ID or any(ord(c) < 32 or ord(c) == 127 for c in message_id):
        raise InvalidParamsError(
            message=f"messageId {message_id[:80]!r} cannot be used: it must be at most "
                    f"{MAX_ID} characters without control characters")


def task_id_for(context_id: str, message_id: str) -> str:
    """The id of the task started in ``context_id`` by the message ``message_id``."""
    raw = json.dumps([context_id, message_id], separators=(",", ":")).encode()
    return _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_task_id(task_id: str) -> tuple[str, str] | None:
    """``(context_id, message_id)`` of a task id this adapter issued, else ``None``."""
    if not task_id.startswith(_PREFIX):
        return None
    body = task_id.removeprefix(_PREFIX)
    try:
        pair = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if (not isinstance(pair, list) or len(pair) != 2
            or not all(isinstance(p, str) and p for p in pair)):
        return None
    return pair[0], pair[1]
