"""A response rendered from its turn: the Response object and its events.

``ResponseView`` is one response (its id, conversation and recorded origin). Its events come
from a run being read (``live``) or are derived from the turn's record (``events_of``); both
go through the same ``RunTranslator``, outputs first and pending requests last, so the
Response a stream ended with is the one ``GET`` derives later. What only the owner of a run
saw (token deltas, more than one delta per message) is not in a derived stream. This module
must never call the host.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from checkflow.adapters.foundry._events import Event, EventBuilder
from checkflow.adapters.foundry._objects import item_id, response_object, usage_of
from checkflow.adapters.foundry._origin import ResponseOrigin
from checkflow.adapters.foundry._translate import RunTranslator, response_status
from checkflow.hosting import TurnRecord
from checkflow.workflows import WorkflowEvent

__all__ = ["LiveEvents", "ResponseView", "error_of", "status_of"]


def status_of(record: TurnRecord) -> str:
    """The Response status of a turn: ``in_progress`` while it runs, a pause ``completed``."""
    if record.state == "running":
        return "in_progress"
    if record.state == "committed":
        return response_status(record.status)
    return record.state  # "failed" or "cancelled": it did not move the head


def error_of(record: TurnRecord, status: str) -> dict[str, Any] | None:
    """The Response ``error`` of a failed turn (why, as recorded), else ``None``."""
    if status != "failed":
        return None
    return {"code": "server_error", "message": record.error or "the workflow run failed"}


def _ended_at(record: TurnRecord) -> int | None:
    """When the turn ended (its last snapshot, or its recorded outcome), in epoch seconds."""
    if record.ended_at is None:
        return None
    try:
        return int(datetime.fromisoformat(record.ended_at.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


class ResponseView:
    """One response: renders its body for a status and its events from its turn."""

    def __init__(self, response_id: str, conversation_id: str, origin: ResponseOrigin
                 ) -> None:
        self.response_id = response_id
        self.conversation_id = conversation_id
        self.origin = origin

    def body(self, status: str, output: Iterable[dict[str, Any]] = (), *,
             error: dict[str, Any] | None = None, completed_at: int | None = None,
             usage: dict[str, Any] | None = None) -> dict[str, Any]:
        origin = self.origin
        return response_object(
            id=self.response_id, created_at=origin.created_at, status=status,
            model=origin.model, output=list(output), conversation_id=self.conversation_id,
            previous_response_id=origin.previous_response_id,
            instructions=origin.instructions, metadata=origin.metadata, store=origin.store,
            background=origin.background, completed_at=completed_at, error=error,
            incomplete_reason="max_output_tokens" if status == "incomplete" else None,
            usage=usage, agent_reference=origin.agent_reference,
            agent_session_id=origin.agent_session_id)

    def input_items(self) -> list[dict[str, Any]]:
        """The input items as sent, with their ids."""
        return [{**item, "id": item_id(self.response_id, index, "item")}
                for index, item in enumerate(self.origin.input)]

    def live(self) -> LiveEvents:
        return LiveEvents(self)

    def events_of(self, record: TurnRecord) -> list[Event]:
        """Every event of the response as its turn's record tells it (a running turn: its
        opening events only)."""
        live = self.live()
        events = live.start()
        if record.state == "running":
            return events
        if record.state == "committed":
            events += live.translator.outputs(record.outputs)
        return events + live.finish(record)

    def final_body(self, record: TurnRecord) -> dict[str, Any]:
        """The Response as its turn's record tells it."""
        if record.state == "running":
            return self.body("in_progress")
        body: dict[str, Any] = self.events_of(record)[-1]["response"]
        return body


class LiveEvents:
    """The events of one response as a run (or a follower of it) produces them."""

    def __init__(self, view: ResponseView) -> None:
        self.view = view
        self.builder = EventBuilder(view.response_id)
        self.translator = RunTranslator(self.builder)

    def start(self) -> list[Event]:
        return self.builder.start(lambda status: self.view.body(status))

    def on_event(self, event: WorkflowEvent) -> list[Event]:
        return self.translator.on_event(event)

    def finish(self, record: TurnRecord) -> list[Event]:
        """The closing events: what is still pending, then the terminal event."""
        status = status_of(record)
        committed = record.state == "committed"
        pending = record.pending_requests if committed else {}
        usage = usage_of(record.outputs) if committed else None

        def final(output: list[dict[str, Any]]) -> dict[str, Any]:
            return self.view.body(status, output, error=error_of(record, status),
                                  completed_at=_ended_at(record), usage=usage)

        return self.translator.finish(pending, final)

    def sequence(self) -> int:
        return self.builder.sequence
