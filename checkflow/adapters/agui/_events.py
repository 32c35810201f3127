"""Workflow events and run results -> AG-UI 1.0 events, for one run.

``RunTranslator`` is pure: it turns the events a hosted run yields (and how the run ended) into
``ag_ui.core`` event models in an order the AG-UI verifier accepts: ``RUN_STARTED`` first,
balanced ``STEP_*`` per superstep, balanced ``TEXT_MESSAGE_*`` triads, the shared state as a
``STATE_SNAPSHOT`` first and then as ``STATE_DELTA``s (JSON Patch, ``_delta``) when they are
smaller, and exactly one terminal event (``RUN_FINISHED`` with its outcome, or ``RUN_ERROR``).
Tool calls and results an agent streams are ``TOOL_CALL_*`` events (``_tools``), and a call a
pending request pauses for is shown before the interrupt if the stream has not shown it.
Every event carries ``timestamp`` (milliseconds since the Unix epoch, what every AG-UI SDK
sets): the workflow event's own time when it has one, else the translator's clock when the
event is made. This module must never do I/O, touch a host or know about HTTP.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    Interrupt,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)

from checkflow.adapters.agui._delta import state_patch
from checkflow.adapters.agui._tools import TOOL_CALL_REASON, ToolCalls, tool_interrupt
from checkflow.agents import (
    AgentResponse,
    AgentRunUpdateEvent,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
)
from checkflow.workflows import (
    OutputEvent,
    RunStatus,
    SuperstepCompletedEvent,
    SuperstepStartedEvent,
    WorkflowEvent,
)

__all__ = ["INTERRUPT_REASON", "OUTPUT_EVENT_NAME", "RunTranslator", "interrupt_message"]

INTERRUPT_REASON = "input_required"
"""The AG-UI core reason of a checkflow request that is not a tool call (it carries a schema)."""

OUTPUT_EVENT_NAME = "checkflow:output"
"""The ``CUSTOM`` event name for an output that is not text."""

_TEXT_ROLES = {"assistant", "user", "system"}
_TRANSLATED = (SuperstepStartedEvent, SuperstepCompletedEvent, AgentRunUpdateEvent, OutputEvent)
_PROMPT_KEYS = ("message", "question", "prompt", "text")
_TOOL_CONTENTS = (FunctionCallContent, FunctionResultContent)


def interrupt_message(data: Any) -> str | None:
    """The human-readable prompt in request data: the data itself, or a prompt-like key."""
    if isinstance(data, str):
        return data or None
    if isinstance(data, Mapping):
        for key in _PROMPT_KEYS:
            value = data.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def now_millis() -> int:
    """Milliseconds since the Unix epoch: the unit of an AG-UI ``timestamp``."""
    return time.time_ns() // 1_000_000


def _calls(response: AgentResponse) -> bool:
    return any(isinstance(c, FunctionCallContent) for m in response.messages for c in m.contents)


class RunTranslator:
    """Translates one run's workflow events into AG-UI events, keeping every triad balanced.

    ``to_json`` turns output data into JSON-native values (the hosting toolkit's
    ``jsonable``); ``new_id`` makes message ids; ``clock`` gives the ``timestamp`` (ms) of an
    event with no workflow event behind it, or whose workflow event was not stamped by a
    run (a replay's, a follower's). ``messages`` lists, as AG-UI message dicts, every text
    message this run emitted, for the ``MESSAGES_SNAPSHOT`` before the end.
    """

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        *,
        to_json: Callable[[Any], Any] = lambda value: value,
        new_id: Callable[[], str] = lambda: f"msg-{uuid.uuid4().hex}",
        clock: Callable[[], int] = now_millis,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.messages: list[dict[str, Any]] = []
        self._to_json = to_json
        self._new_id = new_id
        self._clock = clock
        self._step: str | None = None
        self._open: dict[str, tuple[str, str]] = {}  # executor id -> (message id, role)
        self._streamed: set[str] = set()  # executors whose deltas already showed their reply
        self._texts: dict[str, list[str]] = {}
        self._state: Mapping[str, Any] | None = None  # the last state this stream sent
        self._last = 0  # the latest timestamp this stream sent
        self.tools = ToolCalls(self.messages, to_json)
        self.finished = False

    def name_messages(self, new_id: Callable[[], str]) -> None:
        """Name this run's text messages with ``new_id`` from now on (a turn's own ids)."""
        self._new_id = new_id

    # -- the run's frame -----------------------------------------------------------------

    def started(self) -> RunStartedEvent:
        """``RUN_STARTED``: declares protocol 1.0 and echoes the ids exactly as sent."""
        event = RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                protocol_version=PROTOCOL_VERSION)
        self._stamp([event], self._clock())
        return event

    def _stamp(self, events: list[BaseEvent], millis: int) -> list[BaseEvent]:
        """Stamp ``events`` at ``millis``, never before what this stream already sent: a
        workflow event keeps the time it happened, and an event made as it is sent (a
        state, the end) may be a millisecond later than the next workflow event's time."""
        self._last = max(self._last, millis)
        for event in events:
            if event.timestamp is None:
                event.timestamp = self._last
        return events

    def _millis(self, event: WorkflowEvent) -> int:
        seconds = event.timestamp.timestamp()
        if event.sequence <= 0 or seconds <= 0:  # not stamped by a run: made now
            return self._clock()
        return int(seconds * 1000)

    def translate(self, event: WorkflowEvent) -> list[BaseEvent]:
        """The AG-UI events for one workflow event (often none), stamped with its time."""
        if not isinstance(event, _TRANSLATED):
            return []
        stamp = self._millis(event)
        if isinstance(event, SuperstepStartedEvent):
            out = self._close_step()
            self._step = f"superstep-{event.superstep}"
            out.append(StepStartedEvent(step_name=self._step))
        elif isinstance(event, SuperstepCompletedEvent):
            out = self._close_step()
        elif isinstance(event, AgentRunUpdateEvent):
            update = event.update
            out = self._delta(event.executor_id, update.role, update.text)
            if any(isinstance(c, _TOOL_CONTENTS) for c in update.contents):
                out.extend(self._end(event.executor_id))  # a text the calls follow ends first
                out.extend(self.tools.contents(update.contents, results=update.role == "tool"))
        else:
            out = self._output(event.executor_id, event.data)
        return self._stamp(out, stamp)

    def state(self, current: Mapping[str, Any]) -> list[BaseEvent]:
        """The event that brings a client from the last state this stream sent to
        ``current``: a ``STATE_SNAPSHOT`` the first time, then a ``STATE_DELTA`` (RFC 6902)
        when it is smaller than a snapshot, else a snapshot; nothing when nothing changed."""
        previous, self._state = self._state, current
        if previous is None:
            return self._stamp([StateSnapshotEvent(snapshot=dict(current))], self._clock())
        patch = state_patch(previous, current)
        if patch == []:
            return []
        event: BaseEvent = (StateSnapshotEvent(snapshot=dict(current)) if patch is None
                            else StateDeltaEvent.model_validate({"delta": patch}))
        return self._stamp([event], self._clock())

    def finish(
        self,
        status: RunStatus,
        *,
        pending: Sequence[Mapping[str, Any]] = (),
        resume_token: Mapping[str, Any] | None = None,
        transcript: Sequence[Mapping[str, Any]] | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> list[BaseEvent]:
        """The end of a run that did not fail: snapshots, then ``RUN_FINISHED`` with its outcome.

        The state goes as ``state()`` sends it (nothing when the stream already showed it).
        The events are stamped now (``clock``). ``pending`` holds the hosting toolkit's
        pending views (``request_id``, ``data``, ``response_schema``, ``source_executor_id``);
        ``transcript`` the thread's messages (this run's own text messages are appended to it,
        unless it lists them already).
        """
        out = self._close_step()
        if status is RunStatus.AWAITING_RESPONSES:
            out.extend(self.tools.pending(pending))
        if state is not None:
            out.extend(self.state(state))
        if transcript is not None:
            known = {m.get("id") for m in transcript}
            messages = [*transcript, *(m for m in self.messages if m["id"] not in known)]
            out.append(MessagesSnapshotEvent.model_validate({"messages": messages}))
        outcome: Any
        if status is RunStatus.AWAITING_RESPONSES and pending:
            interrupts = [self.interrupt(view, resume_token) for view in pending]
            outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
        elif status is RunStatus.CANCELLED:
            outcome = RunFinishedCancelledOutcome()
        else:
            outcome = RunFinishedSuccessOutcome()
        out.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                    outcome=outcome))
        self.finished = True
        return self._stamp(out, self._clock())

    def error(self, code: str, message: str,
              transcript: Sequence[Mapping[str, Any]] | None = None,
              state: Mapping[str, Any] | None = None) -> list[BaseEvent]:
        """The end of a failed run: open triads closed, the shared state back at the last
        good head when ``state`` is given (a delta or a snapshot, as ``state()``), the
        thread's ``MESSAGES_SNAPSHOT`` when ``transcript`` is given, then ``RUN_ERROR``."""
        out = self._close_step()
        if state is not None:
            out.extend(self.state(state))
        if transcript is not None:
            out.append(MessagesSnapshotEvent.model_validate({"messages": list(transcript)}))
        out.append(RunErrorEvent(code=code, message=message))
        self.finished = True
        return self._stamp(out, self._clock())

    @staticmethod
    def interrupt(view: Mapping[str, Any], resume_token: Mapping[str, Any] | None) -> Interrupt:
        """One interrupt for one pending request: id = request id, reason ``input_required``;
        a tool call's (``view["tool"]``) is reason ``tool_call`` with its ``toolCallId``, a
        message naming the call, and the call in ``metadata.checkflow.toolCall``."""
        checkflow: dict[str, Any] = {
            "requestData": view.get("data"),
            "sourceExecutorId": view.get("source_executor_id"),
        }
        if resume_token is not None:
            checkflow["resumeToken"] = dict(resume_token)
        schema = view.get("response_schema")
        tool = view.get("tool")
        reason, call_id, message = INTERRUPT_REASON, None, interrupt_message(view.get("data"))
        if isinstance(tool, Mapping):
            reason = TOOL_CALL_REASON
            call_id, message = tool_interrupt(tool)
            checkflow["toolCall"] = dict(tool)
        return Interrupt(
            id=str(view["request_id"]),
            reason=reason,
            message=message,
            tool_call_id=call_id,
            response_schema=schema if isinstance(schema, dict) else None,
            metadata={"checkflow": checkflow},
        )

    # -- text ------------------------------------------------------------------------------

    def _delta(self, executor_id: str, role: str, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        current = self._open.get(executor_id)
        if current is not None and current[1] != role:
            out.extend(self._end(executor_id))
            current = None
        if not text:
            return out
        if current is None:
            out.extend(self._start(executor_id, role if role in _TEXT_ROLES else "assistant"))
        message_id, _ = self._open[executor_id]
        self._texts[message_id].append(text)
        out.append(TextMessageContentEvent(message_id=message_id, delta=text))
        self._streamed.add(executor_id)
        return out

    def _start(self, executor_id: str, role: str) -> list[BaseEvent]:
        message_id = self._new_id()
        self._open[executor_id] = (message_id, role)
        self._texts[message_id] = []
        return [TextMessageStartEvent(message_id=message_id, role=role)]  # type: ignore[arg-type]

    def _end(self, executor_id: str) -> list[BaseEvent]:
        opened = self._open.pop(executor_id, None)
        if opened is None:
            return []
        message_id, role = opened
        self.messages.append(
            {"id": message_id, "role": role, "content": "".join(self._texts.pop(message_id))}
        )
        return [TextMessageEndEvent(message_id=message_id)]

    def _whole(self, executor_id: str, role: str, text: str) -> list[BaseEvent]:
        out = self._end(executor_id)
        out.extend(self._start(executor_id, role))
        message_id, _ = self._open[executor_id]
        if text:
            self._texts[message_id].append(text)
            out.append(TextMessageContentEvent(message_id=message_id, delta=text))
        out.extend(self._end(executor_id))
        return out

    def _output(self, executor_id: str, data: Any) -> list[BaseEvent]:
        if isinstance(data, str):
            return self._whole(executor_id, "assistant", data)
        if isinstance(data, ChatMessage) and data.role in _TEXT_ROLES and data.text:
            return self._whole(executor_id, data.role, data.text)
        if isinstance(data, AgentResponse) and (data.text or _calls(data)):
            streamed = executor_id in self._streamed  # its deltas already were its text
            self._streamed.discard(executor_id)
            return self._messages(executor_id, data.messages, text=not streamed)
        out = self._end(executor_id)
        value = {"executorId": executor_id, "data": self._to_json(data)}
        out.append(CustomEvent(name=OUTPUT_EVENT_NAME, value=value))
        return out

    def _messages(self, executor_id: str, messages: Iterable[ChatMessage], *, text: bool
                  ) -> list[BaseEvent]:
        """A response's messages: their text (unless its deltas showed it) and the calls in
        them this stream has not shown (a call the caller answers, as a plain tool)."""
        out = self._end(executor_id)
        for message in messages:
            if text and message.text and message.role in _TEXT_ROLES:
                out.extend(self._whole(executor_id, message.role, message.text))
            out.extend(self.tools.contents(message.contents, results=message.role == "tool"))
        return out

    def _close_step(self) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for executor_id in list(self._open):
            out.extend(self._end(executor_id))
        if self._step is not None:
            out.append(StepFinishedEvent(step_name=self._step))
            self._step = None
        return out
