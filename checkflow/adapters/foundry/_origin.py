"""What a response records with its turn, and the turn's idempotency key.

A response is a hosted turn; what the Responses protocol needs to show it later that the
checkpoint does not already say (when it was created, its model, ``previous_response_id``,
instructions, metadata, ``store``/``background``, the input items as sent and the agent it
was for) is the turn's ``TurnOrigin.data``, committed with the turn's first snapshot. Nothing
is written about a response after its turn committed. This module must never call the host.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec

from checkflow.adapters.foundry._wire import CreateRequest
from checkflow.hosting import TurnOrigin

__all__ = ["PROTOCOL", "ResponseOrigin", "idempotency_key", "keyed_conversation",
           "origin_of", "turn_origin"]

PROTOCOL = "responses"
"""The protocol name a Responses turn is recorded under (``TurnRecord.protocol``)."""


class ResponseOrigin(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A response's own data, recorded with its turn (item ids are derived, not stored)."""

    created_at: int
    model: str
    previous_response_id: str | None = None
    instructions: str | None = None
    metadata: dict[str, str] = {}
    store: bool = True
    background: bool = False
    input: list[dict[str, Any]] = []
    agent_reference: dict[str, Any] | None = None
    agent_session_id: str | None = None  # in a container: the session it answered in


def turn_origin(origin: ResponseOrigin) -> TurnOrigin:
    """The ``TurnOrigin`` that records ``origin`` with the turn."""
    return TurnOrigin(PROTOCOL, msgspec.to_builtins(origin))


def origin_of(protocol: str, data: Mapping[str, Any]) -> ResponseOrigin | None:
    """The response a turn's recorded origin describes; ``None`` for another protocol's turn
    (or data that is not a response's)."""
    if protocol != PROTOCOL:
        return None
    try:
        return msgspec.convert(dict(data), ResponseOrigin)
    except msgspec.ValidationError:
        return None


def idempotency_key(request: CreateRequest, header: str | None) -> str | None:
    """The key that makes this response's turn happen once.

    The ``Idempotency-Key`` header when sent; else, for replies continuing a response, that
    response's id with the call ids answered (a retry of the same answer is the same key, so
    the ``openai`` client's own retries are safe without a header); else none. An explicit
    branch has a key only from the header: answering the same calls again is its purpose.
    """
    if header:
        return f"header:{header}"
    if request.replies and not request.branch:
        calls = ",".join(sorted(reply.call_id for reply in request.replies))
        return f"reply:{request.previous_response_id or ''}:{calls}"
    return None


def keyed_conversation(principal: str | None, header: str) -> str:
    """The conversation of a new response sent with only an ``Idempotency-Key``: derived
    from the key, so that a retry finds the turn its first attempt started."""
    digest = hashlib.sha256(f"{principal or ''}\x00{header}".encode()).hexdigest()
    return f"conv_{digest[:48]}"
