"""An AG-UI thread as the checkpoint's lineage says it is: transcript, seen ids, interrupts.

Nothing here is stored by the adapter. Each AG-UI turn is run with a ``TurnOrigin``
(``protocol="agui"``, ``data={"runId", "messages"}``: the run id and the new messages as the
client sent them), which the host commits with the turn's first snapshot; ``Host.turns``
gives back the turns on the conversation's lineage. The transcript is then each turn's
messages followed by its text outputs (rendered by the same ``RunTranslator`` a live run
uses, with the same ids: ``{turnId}-{n}``), so a branch, a cancel, a native answer or a
``DELETE`` shows exactly as the checkpoint has it. This module must never do I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from checkflow.adapters.agui._events import RunTranslator
from checkflow.adapters.agui._tools import request_views, tool_view
from checkflow.hosting import TurnOrigin, TurnRecord
from checkflow.workflows import OutputEvent, PendingRequest, RunStatus

__all__ = ["PROTOCOL", "ThreadView", "message_ids", "turn_origin", "turn_transcript"]

PROTOCOL = "agui"
"""The ``TurnOrigin.protocol`` of turns run over AG-UI."""


def message_ids(turn_id: str) -> Callable[[], str]:
    """The ids of a turn's text messages, in order: ``{turnId}-1``, ``{turnId}-2``, ..."""
    count = 0

    def new_id() -> str:
        nonlocal count
        count += 1
        return f"{turn_id}-{count}"

    return new_id


def turn_origin(run_id: str, messages: Sequence[Mapping[str, Any]]) -> TurnOrigin:
    """What an AG-UI turn records with its first snapshot: its run id and new messages."""
    return TurnOrigin(PROTOCOL, {"runId": run_id, "messages": [dict(m) for m in messages]})


def turn_transcript(record: TurnRecord, to_json: Callable[[Any], Any]
                    ) -> list[dict[str, Any]]:
    """One turn's part of the transcript: the messages it took in (AG-UI turns only; a
    native turn's input is not a chat message), then its text outputs (and the calls in
    them), then the tool calls it ended paused for."""
    taken: list[dict[str, Any]] = []
    if record.protocol == PROTOCOL:
        taken = [dict(m) for m in record.data.get("messages", ()) if isinstance(m, Mapping)]
    translator = RunTranslator("", "", to_json=to_json, new_id=message_ids(record.turn_id))
    for output in record.outputs:
        translator.translate(OutputEvent("", output))
    translator.finish(record.status,  # closes what is open, so every message is listed
                      pending=request_views(record.pending_requests.values()))
    return [*taken, *translator.messages]


@dataclass(slots=True)
class ThreadView:
    """The thread at its head: what a run is checked against and what a snapshot shows."""

    transcript: list[dict[str, Any]] = field(default_factory=list)
    issued: set[str] = field(default_factory=set)
    """Every interrupt (request id) a turn on the lineage ended with."""
    open: dict[str, PendingRequest] = field(default_factory=dict)
    """The requests pending at the head (its last turn's, when it ended awaiting them)."""
    tools: dict[str, str] = field(default_factory=dict)
    """The open requests that are tool calls: request id -> ``approval`` or ``client``."""
    runs: dict[str, TurnRecord] = field(default_factory=dict)
    """The lineage's turns by their idempotency key (an AG-UI turn's is its runId)."""

    @classmethod
    def of(cls, turns: Iterable[TurnRecord], to_json: Callable[[Any], Any]) -> ThreadView:
        view = cls()
        last: TurnRecord | None = None
        shown: set[str] = set()  # a request still open after several turns shows its call once
        for record in turns:
            for message in turn_transcript(record, to_json):
                if (message_id := str(message.get("id"))) not in shown:
                    shown.add(message_id)
                    view.transcript.append(message)
            view.issued.update(record.pending_requests)
            if record.idempotency_key is not None:
                view.runs[record.idempotency_key] = record
            last = record
        if last is not None and last.status is RunStatus.AWAITING_RESPONSES:
            view.open = dict(last.pending_requests)
        for request_id, request in view.open.items():
            tool = tool_view(request.data, to_json)
            if tool is not None:
                view.tools[request_id] = str(tool["kind"])
        return view

    @property
    def seen(self) -> set[str]:
        """The ids of every message on the lineage, taken in or produced."""
        return {str(m.get("id")) for m in self.transcript}

    @property
    def calls(self) -> set[str]:
        """The ids of every tool call the transcript shows."""
        return {str(call.get("id")) for m in self.transcript
                for call in m.get("toolCalls") or () if isinstance(call, Mapping)}
