"""Response ids that say where their turn is: ``resp_<conversation>_<turn id>``.

A response is a hosted turn, so its id names the conversation (base64url, no padding) and
the turn's id (the host's 32 hex digits). Nothing maps ids to conversations: retrieving,
continuing or cancelling a response reads only the turn (``Host.find_turn``), and no index
is written before or after a turn. Conversations stay principal-scoped, so another principal
decoding an id learns nothing it can use. This module must never call the host.
"""

from __future__ import annotations

import base64
import binascii
import re

__all__ = ["parse_response_id", "response_id"]

_PREFIX = "resp_"
_TURN = re.compile(r"[0-9a-f]{32}")


def response_id(conversation_id: str, turn_id: str) -> str:
    """The id of the response that is turn ``turn_id`` of ``conversation_id``."""
    if not _TURN.fullmatch(turn_id):
        raise ValueError(f"a turn id is 32 hex digits, not {turn_id!r}")
    encoded = base64.urlsafe_b64encode(conversation_id.encode()).decode().rstrip("=")
    return f"{_PREFIX}{encoded}_{turn_id}"


def parse_response_id(value: str) -> tuple[str, str] | None:
    """``(conversation_id, turn_id)`` of a response id, or ``None`` when it is not one."""
    if not value.startswith(_PREFIX):
        return None
    encoded, _, turn_id = value.removeprefix(_PREFIX).rpartition("_")
    if not encoded or not _TURN.fullmatch(turn_id):
        return None
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        conversation_id = raw.decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if response_id(conversation_id, turn_id) != value:  # one spelling per response
        return None
    return conversation_id, turn_id
