"""A hosted run as one response: workflow events in, Responses events and output items out.

``RunTranslator`` is deterministic: the same run's events always give the same Responses
events (item ids derive from the response id and output index), which is what lets a
background response be replayed through ``Host.subscribe`` with its original numbers.
Outputs become assistant messages (a string as is, anything else as JSON); agent updates
stream into one message per executor turn; every request still pending when the run ends
becomes a function call whose ``call_id`` is the request id, or an ``mcp_approval_request``
whose ``id`` is the request id (``_pending`` says which, and under what name), listed after
the outputs (so a stream read live and one derived from the turn's record show the same
items in the same order). This module must never call the host.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from checkflow.adapters.foundry._events import Event, EventBuilder
from checkflow.adapters.foundry._pending import shown_as
from checkflow.agents import AgentResponse, AgentRunUpdateEvent
from checkflow.hosting import jsonable
from checkflow.workflows import (
    OutputEvent,
    PendingRequest,
    RunStatus,
    WorkflowEvent,
)

__all__ = ["RunTranslator", "output_text", "response_status"]

_STATUS = {RunStatus.IDLE: "completed", RunStatus.AWAITING_RESPONSES: "completed",
           RunStatus.FAILED: "failed", RunStatus.CANCELLED: "cancelled",
           RunStatus.RUNNING: "incomplete"}


def response_status(status: RunStatus) -> str:
    """The Response status for a run's final status (a pause is ``completed``)."""
    return _STATUS.get(status, "failed")


def output_text(data: Any) -> str:
    """What an output shows as text: a string as is, an agent's reply as its text, else JSON."""
    if isinstance(data, str):
        return data
    if isinstance(data, AgentResponse):
        return data.text
    return json.dumps(jsonable(data), separators=(",", ":"), ensure_ascii=False)


class RunTranslator:
    """Feeds one run's events to an ``EventBuilder``; ``finish`` lists what is still pending."""

    def __init__(self, builder: EventBuilder) -> None:
        self.builder = builder
        self.asked: list[str] = []
        self._streaming: str | None = None  # executor whose agent updates fill the open message

    def _close(self) -> list[Event]:
        self._streaming = None
        return self.builder.close_message() if self.builder.message_open else []

    def on_event(self, event: WorkflowEvent) -> list[Event]:
        """The Responses events ``event`` stands for (none for engine bookkeeping)."""
        if isinstance(event, AgentRunUpdateEvent):
            text = event.update.text
            if not text:
                return []
            events: list[Event] = []
            if self._streaming != event.executor_id:
                events += self._close()
                events += self.builder.open_message()
                self._streaming = event.executor_id
            events.append(self.builder.text_delta(text))
            return events
        if isinstance(event, OutputEvent):
            if isinstance(event.data, AgentResponse) and self._streaming == event.executor_id:
                return self._close()  # the updates already carried its text
            return [*self._close(), *self.builder.message(output_text(event.data))]
        return []  # requests are listed by finish(), once the run says what is pending

    def _ask(self, request: PendingRequest) -> list[Event]:
        if request.request_id in self.asked:
            return []
        self.asked.append(request.request_id)
        shown = shown_as(request)
        if shown.kind == "mcp_approval_request":
            return self.builder.approval_request(request.request_id, shown.arguments,
                                                 shown.name)
        return self.builder.function_call(request.request_id, shown.arguments, shown.name)

    def outputs(self, outputs: Iterable[Any]) -> list[Event]:
        """Messages for a finished run's outputs (the blocking path has no events)."""
        return [event for data in outputs for event in self.builder.message(output_text(data))]

    def finish(
        self, pending: Mapping[str, PendingRequest],
        response: Callable[[list[dict[str, Any]]], dict[str, Any]],
    ) -> list[Event]:
        """Close the open message, list every pending request not yet shown (in the order
        the host gives them), then the terminal event for ``response(output)``."""
        events = self._close()
        for request in pending.values():
            events += self._ask(request)
        events.append(self.builder.finish(response(list(self.builder.output))))
        return events
