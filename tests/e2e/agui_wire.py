"""AG-UI on the wire, for the tests that speak raw HTTP: SSE parsing and the bad resumes.

Shared by the in-process tests (``tests/adapters/agui``) and the real-server ones here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import jsonpatch

__all__ = ["RESUME_VIOLATIONS", "followed_states", "parse_sse", "untimed"]


def parse_sse(text: str) -> list[dict[str, Any]]:
    """The JSON ``data`` of every event in an SSE body (comments and pings skipped)."""
    events = []
    for frame in text.split("\n\n"):
        data = [line[5:].lstrip() for line in frame.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


def untimed(event: dict[str, Any]) -> dict[str, Any]:
    """An event without its ``timestamp`` (when it was made), to compare what it says."""
    return {k: v for k, v in event.items() if k != "timestamp"}


def followed_states(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The state a client following the stream holds after each ``STATE_SNAPSHOT`` or
    ``STATE_DELTA`` (deltas applied with ``jsonpatch``, as RFC 6902 says; a delta before any
    snapshot fails here, as it would for a new client)."""
    states: list[dict[str, Any]] = []
    for event in events:
        if event["type"] == "STATE_SNAPSHOT":
            states.append(event["snapshot"])
        elif event["type"] == "STATE_DELTA":
            assert states, "a STATE_DELTA before any STATE_SNAPSHOT"
            states.append(jsonpatch.apply_patch(states[-1], event["delta"]))
    return states


def _answer(interrupt_id: str, payload: Any = 1, status: str = "resolved") -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": status, "payload": payload}


RESUME_VIOLATIONS: dict[str, Callable[[str, str], dict[str, Any]]] = {
    "resume_required": lambda a, b: {
        "messages": [{"id": "more-1", "role": "user", "content": "more"}]},
    "resume_incomplete": lambda a, b: {"resume": [_answer(a)]},
    "unknown_interrupt": lambda a, b: {"resume": [_answer(a), _answer(b), _answer("nope")]},
    "duplicate_interrupt": lambda a, b: {"resume": [_answer(a), _answer(b), _answer(a, 2)]},
    "invalid_resume_payload": lambda a, b: {"resume": [_answer(a, "many"), _answer(b)]},
    "input_with_resume": lambda a, b: {
        "messages": [{"id": "more-2", "role": "user", "content": "and also"}],
        "resume": [_answer(a), _answer(b)]},
}
"""For a thread with two open interrupts ``a`` and ``b`` (integer answers): the body fields of
a run breaking the resume contract, by the RUN_ERROR code it must get."""
