"""One response's stream of Responses events, numbered and balanced by construction.

``EventBuilder`` hands out ``sequence_number``s strictly increasing from 0 (as OpenAI and
Foundry number them, so ``starting_after=N`` skips the same events there and here), gives
every output item one identity at one ``output_index``, closes every ``added`` with its
``done`` and ends with exactly one terminal event; asking for anything out of order raises
``RuntimeError`` (a bug in the adapter, never a client's fault). It keeps the finished items,
which are the Response's ``output``. This module must never call the host or touch storage.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from checkflow.adapters.foundry._objects import (
    REQUEST_INFO,
    approval_item,
    function_call_item,
    item_id,
    message_item,
)

__all__ = ["TERMINAL_EVENTS", "EventBuilder"]

Event = dict[str, Any]
TERMINAL_EVENTS = {"completed": "response.completed", "failed": "response.failed",
                   "incomplete": "response.incomplete", "cancelled": "response.failed"}
"""The terminal event for each final status (a cancelled response ends ``response.failed``
with status ``cancelled``, as the Responses state machine allows)."""


class EventBuilder:
    """Builds the events of response ``response_id``; ``output`` holds its finished items."""

    def __init__(self, response_id: str) -> None:
        self.response_id = response_id
        self.output: list[dict[str, Any]] = []
        self.events: list[Event] = []
        self._sequence = -1
        self._open: dict[str, Any] | None = None
        self._text: list[str] = []
        self._started = False
        self._finished = False

    @property
    def sequence(self) -> int:
        """The number of the last event built (-1 before the first)."""
        return self._sequence

    @property
    def message_open(self) -> bool:
        return self._open is not None

    def _emit(self, type: str, **fields: Any) -> Event:
        if self._finished:
            raise RuntimeError(f"{type} after the response's terminal event")
        self._sequence += 1
        event = {"type": type, "sequence_number": self._sequence, **fields}
        self.events.append(event)
        return event

    def start(self, response: Callable[[str], dict[str, Any]], *, queued: bool = False
              ) -> list[Event]:
        """``response.created`` (then ``queued`` or ``in_progress``); ``response(status)``
        builds the Response object shown in them."""
        if self._started:
            raise RuntimeError("the response was already started")
        self._started = True
        first = "queued" if queued else "in_progress"
        return [self._emit("response.created", response=response(first)),
                self._emit(f"response.{first}", response=response(first))]

    def in_progress(self, response: dict[str, Any]) -> Event:
        """``response.in_progress`` for a queued response that started running."""
        return self._emit("response.in_progress", response=response)

    def _require_started(self) -> None:
        if not self._started:
            raise RuntimeError("output before response.created")

    def open_message(self) -> list[Event]:
        """An assistant message item and its one ``output_text`` part, ready for deltas."""
        self._require_started()
        if self._open is not None:
            raise RuntimeError("a message is already open")
        index = len(self.output)
        self._open = message_item(item_id(self.response_id, index), "", status="in_progress")
        self._text = []
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        ids = {"item_id": self._open["id"], "output_index": index}
        return [self._emit("response.output_item.added", output_index=index,
                           item=copy.deepcopy(self._open)),
                self._emit("response.content_part.added", content_index=0, part=part, **ids)]

    def text_delta(self, delta: str) -> Event:
        """``response.output_text.delta`` appending ``delta`` to the open message."""
        if self._open is None:
            raise RuntimeError("a text delta with no open message")
        self._text.append(delta)
        return self._emit("response.output_text.delta", item_id=self._open["id"],
                          output_index=len(self.output), content_index=0, delta=delta,
                          logprobs=[])

    def close_message(self) -> list[Event]:
        """The open message's ``done`` events; the message joins ``output``."""
        if self._open is None:
            raise RuntimeError("no message is open")
        index, text = len(self.output), "".join(self._text)
        item = message_item(self._open["id"], text)
        ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
        events = [
            self._emit("response.output_text.done", text=text, logprobs=[], **ids),
            self._emit("response.content_part.done", part=copy.deepcopy(item["content"][0]),
                       **ids),
            self._emit("response.output_item.done", output_index=index,
                       item=copy.deepcopy(item)),
        ]
        self.output.append(item)
        self._open = None
        return events

    def message(self, text: str) -> list[Event]:
        """A whole assistant message: opened, one delta with all of ``text``, closed."""
        return [*self.open_message(), self.text_delta(text), *self.close_message()]

    def function_call(self, call_id: str, arguments: str, name: str = REQUEST_INFO
                      ) -> list[Event]:
        """A function call (``request_info``, or a client tool's): added, its arguments,
        done."""
        self._require_started()
        if self._open is not None:
            raise RuntimeError("a function call while a message is open")
        index = len(self.output)
        id = item_id(self.response_id, index, "fc")
        opening = function_call_item(id, call_id, "", name=name, status="in_progress")
        item = function_call_item(id, call_id, arguments, name=name)
        ids = {"item_id": id, "output_index": index}
        events = [
            self._emit("response.output_item.added", output_index=index, item=opening),
            self._emit("response.function_call_arguments.delta", delta=arguments, **ids),
            self._emit("response.function_call_arguments.done", name=item["name"],
                       arguments=arguments, **ids),
            self._emit("response.output_item.done", output_index=index,
                       item=copy.deepcopy(item)),
        ]
        self.output.append(item)
        return events

    def approval_request(self, request_id: str, arguments: str, name: str = REQUEST_INFO
                         ) -> list[Event]:
        """An ``mcp_approval_request`` item: added and done (it has no argument deltas)."""
        self._require_started()
        if self._open is not None:
            raise RuntimeError("an approval request while a message is open")
        index = len(self.output)
        item = approval_item(request_id, arguments, name=name)
        events = [
            self._emit("response.output_item.added", output_index=index,
                       item=copy.deepcopy(item)),
            self._emit("response.output_item.done", output_index=index,
                       item=copy.deepcopy(item)),
        ]
        self.output.append(item)
        return events

    def finish(self, response: dict[str, Any]) -> Event:
        """The one terminal event for ``response`` (whose ``output`` must be ``self.output``)."""
        self._require_started()
        if self._open is not None:
            raise RuntimeError("the response ends with a message still open")
        if response["output"] != self.output:
            raise RuntimeError("the terminal response's output differs from the items streamed")
        event = self._emit(TERMINAL_EVENTS[response["status"]], response=response)
        self._finished = True
        return event
