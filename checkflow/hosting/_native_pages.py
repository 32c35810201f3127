"""Paged lists of the native API: a principal's conversations and a conversation's snapshots.

Cursors are opaque to clients (URL-safe base64 of the last item's sort key), so a page
boundary stays put while conversations or snapshots are added. This module must never write;
listing conversations reads each one's head (for operators and small deployments: it costs
one checkpoint load per conversation).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import msgspec

from checkflow.checkpoints import Checkpoint
from checkflow.errors import CheckflowError
from checkflow.hosting._http import HttpError
from checkflow.hosting._protocol import Host
from checkflow.hosting._results import ResumeToken
from checkflow.hosting._views import inspect_metadata, snapshot_summary

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "conversation_page", "page_limit", "page_params",
           "snapshot_page"]

DEFAULT_PAGE = 100
MAX_PAGE = 1000


def _encode(key: Any) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(key)).decode().rstrip("=")


def _decode(cursor: str) -> Any:
    try:
        return msgspec.json.decode(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise HttpError(400, "invalid_cursor", f"cursor {cursor!r} is not one this API gave"
                        ) from None


def page_limit(query: Mapping[str, str], *, default: int = DEFAULT_PAGE,
               maximum: int = MAX_PAGE) -> int:
    """``?limit=`` (``default`` when absent); 400 ``invalid_limit`` unless 1 to ``maximum``."""
    text = query.get("limit")
    try:
        limit = default if text is None else int(text)
    except ValueError:
        limit = 0
    if not 1 <= limit <= maximum:
        raise HttpError(400, "invalid_limit",
                        f"limit must be an integer from 1 to {maximum}, not {text!r}")
    return limit


def page_params(query: Mapping[str, str]) -> tuple[int, Any]:
    """``(limit, decoded cursor or None)`` from ``?limit=&cursor=``; 400 when malformed."""
    limit = page_limit(query)
    cursor = query.get("cursor")
    return limit, None if not cursor else _decode(cursor)


def snapshot_page(checkpoint: Checkpoint, token: ResumeToken, limit: int, cursor: Any
                  ) -> dict[str, Any]:
    """Snapshots oldest first, ``limit`` of them after the one ``cursor`` names."""
    snapshots = checkpoint.snapshots
    start = 0
    if cursor is not None:
        ids = [s.snapshot_id for s in snapshots]
        if not isinstance(cursor, str) or cursor not in ids:
            raise HttpError(400, "invalid_cursor", "the cursor names no snapshot of this "
                            "conversation (pruned meanwhile?)")
        start = ids.index(cursor) + 1
    page = snapshots[start:start + limit]
    more = start + limit < len(snapshots)
    return {"snapshots": [snapshot_summary(s, token.snapshot_id) for s in page],
            "next_cursor": _encode(page[-1].snapshot_id) if more and page else None}


async def conversation_page(host: Host, principal: str | None, limit: int, cursor: Any
                            ) -> dict[str, Any]:
    """The principal's conversations, newest head first, ``limit`` after ``cursor``."""
    entries = []
    for conversation_id in await host.list_conversations(principal=principal):
        try:
            checkpoint, token = await host.get_checkpoint(conversation_id, principal=principal)
            head = checkpoint.get_snapshot(token.snapshot_id)
        except CheckflowError:
            continue  # deleted meanwhile, or unreadable: GET it to see why
        status = inspect_metadata(head).get("status")
        entries.append({"conversation_id": conversation_id,
                        "status": None if status is None else str(status).lower(),
                        "head_snapshot_id": token.snapshot_id, "updated_at": head.timestamp})
    entries.sort(key=lambda e: (e["updated_at"], e["conversation_id"]), reverse=True)
    if cursor is not None:
        if not (isinstance(cursor, list) and len(cursor) == 2):
            raise HttpError(400, "invalid_cursor", "the cursor is not one this API gave")
        after = (str(cursor[0]), str(cursor[1]))
        entries = [e for e in entries if (e["updated_at"], e["conversation_id"]) < after]
    page = entries[:limit]
    more = len(entries) > limit
    last = page[-1] if page else None
    return {"conversations": page,
            "next_cursor": _encode([last["updated_at"], last["conversation_id"]])
            if more and last else None}
