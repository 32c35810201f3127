"""How the commands print: JSON for scripts, and the pending-request lines people read.

Shared by the ``checkpoints`` and ``conversations`` commands. This module must never read or
write a storage; it only formats what it is given.
"""

from __future__ import annotations

import sys
from typing import Any

import msgspec

from checkflow.checkpoints import Checkpoint
from checkflow.hosting import jsonable
from checkflow.workflows import inspect_snapshot

__all__ = ["describe_request", "pending", "print_fields", "print_json"]


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout."""
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(jsonable(value))).decode() + "\n")


def pending(checkpoint: Checkpoint) -> list[Any]:
    """The pending requests at the checkpoint's working head, JSON-native."""
    head = checkpoint.head_snapshot
    if head is None:
        return []
    return [
        {"request_id": r.request_id, "source_executor_id": r.source_executor_id,
         "data": jsonable(r.data), "response_type": r.response_type_name}
        for r in inspect_snapshot(head).pending_requests.values()
    ]


def describe_request(request: Any) -> str:
    """One pending request on one line."""
    if not isinstance(request, dict):
        return repr(request)
    return (f"{request.get('request_id')}: {request.get('data')!r} "
            f"(from {request.get('source_executor_id')}, "
            f"answer type {request.get('response_type')})")


def print_fields(body: dict[str, Any], keys: tuple[str, ...], extra: dict[str, str]) -> None:
    """``key: value`` lines of ``body``'s ``keys`` (those present), then ``extra``, then the
    pending requests one per line."""
    for key in keys:
        if key in body:
            print(f"{key + ':':26}{body[key]}")
    for key, text in extra.items():
        print(f"{key + ':':26}{text}")
    print(f"{'pending_requests:':26}{len(body['pending_requests'])}")
    for request in body["pending_requests"]:
        print(f"  - {describe_request(request)}")
