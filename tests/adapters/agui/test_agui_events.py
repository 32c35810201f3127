"""The AG-UI event translation, on hand-built workflow events: order, balance and outcomes."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from ag_ui.core import Event
from pydantic import TypeAdapter

from checkflow.adapters.agui._events import RunTranslator, interrupt_message
from checkflow.agents import (
    AgentResponse,
    AgentResponseUpdate,
    AgentRunUpdateEvent,
    ChatMessage,
    TextContent,
)
from checkflow.workflows import (
    ExecutorInvokedEvent,
    OutputEvent,
    RunStatus,
    SuperstepCompletedEvent,
    SuperstepStartedEvent,
)

NOW = 1_796_000_000_123
"""The translators' clock here (ms): what an event with no run-stamped time carries."""


EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def _translator() -> RunTranslator:
    counter = itertools.count(1)
    return RunTranslator("thread-1", "run-1", new_id=lambda: f"m{next(counter)}",
                         clock=lambda: NOW)


def _wire(events: list[Any]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json", by_alias=True) for e in events]


def _types(events: list[Any]) -> list[str]:
    return [e.type.value for e in events]


def _superstep(t: RunTranslator, n: int, *inner: Any) -> list[Any]:
    out = t.translate(SuperstepStartedEvent(superstep=n))
    for event in inner:
        out.extend(t.translate(event))
    out.extend(t.translate(SuperstepCompletedEvent(superstep=n)))
    return out


def test_run_started_declares_protocol_1_0_and_echoes_the_ids() -> None:
    started = RunTranslator("t-9", "r-9", clock=lambda: NOW).started().model_dump(
        mode="json", by_alias=True)
    assert started == {"type": "RUN_STARTED", "threadId": "t-9", "runId": "r-9",
                       "protocolVersion": "1.0", "timestamp": NOW}


def test_each_superstep_is_a_balanced_step() -> None:
    t = _translator()
    events = _superstep(t, 1, ExecutorInvokedEvent("a", 1)) + _superstep(t, 2)
    assert _types(events) == ["STEP_STARTED", "STEP_FINISHED", "STEP_STARTED", "STEP_FINISHED"]
    assert [e.step_name for e in events] == ["superstep-1"] * 2 + ["superstep-2"] * 2


def test_a_str_output_is_one_text_message_triad() -> None:
    t = _translator()
    events = _superstep(t, 1, OutputEvent("finish", "HELLO"))
    assert _types(events) == ["STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                              "TEXT_MESSAGE_END", "STEP_FINISHED"]
    assert _wire(events)[1] == {"type": "TEXT_MESSAGE_START", "messageId": "m1",
                                "role": "assistant", "timestamp": NOW}
    assert events[2].delta == "HELLO"
    assert t.messages == [{"id": "m1", "role": "assistant", "content": "HELLO"}]


def test_an_empty_str_output_has_no_content_event() -> None:
    t = _translator()
    events = _superstep(t, 1, OutputEvent("finish", ""))
    assert _types(events)[1:3] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_END"]


def test_a_chat_message_output_keeps_its_role() -> None:
    t = _translator()
    events = _superstep(t, 1, OutputEvent("x", ChatMessage("user", "echo")))
    assert events[1].role == "user"
    assert t.messages == [{"id": "m1", "role": "user", "content": "echo"}]


def test_agent_deltas_stream_as_one_message_and_the_final_response_is_not_repeated() -> None:
    t = _translator()
    updates = [AgentRunUpdateEvent("agent", AgentResponseUpdate((TextContent(s),)))
               for s in ("Hel", "lo")]
    final = OutputEvent("agent", AgentResponse([ChatMessage("assistant", "Hello")]))
    events = _superstep(t, 1, *updates, final)
    assert _types(events) == ["STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                              "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STEP_FINISHED"]
    assert t.messages == [{"id": "m1", "role": "assistant", "content": "Hello"}]


def test_an_agent_response_that_was_not_streamed_becomes_one_triad_per_message() -> None:
    t = _translator()
    response = AgentResponse([ChatMessage("assistant", "one"), ChatMessage("assistant", "two")])
    events = _superstep(t, 1, OutputEvent("agent", response))
    assert _types(events).count("TEXT_MESSAGE_START") == 2
    assert [m["content"] for m in t.messages] == ["one", "two"]


def test_a_non_text_output_is_a_custom_event_with_json_data() -> None:
    t = RunTranslator("t", "r", to_json=lambda value: {"wrapped": repr(value)},
                      clock=lambda: NOW)
    events = _superstep(t, 1, OutputEvent("calc", 42))
    custom = _wire(events)[1]
    assert custom == {"type": "CUSTOM", "name": "checkflow:output",
                      "value": {"executorId": "calc", "data": {"wrapped": "42"}},
                      "timestamp": NOW}
    assert t.messages == []


def test_an_open_stream_is_closed_before_the_step_finishes() -> None:
    t = _translator()
    update = AgentRunUpdateEvent("agent", AgentResponseUpdate((TextContent("partial"),)))
    events = _superstep(t, 1, update)
    assert _types(events)[-2:] == ["TEXT_MESSAGE_END", "STEP_FINISHED"]


def test_finish_idle_sends_the_snapshots_then_success_last() -> None:
    t = _translator()
    _superstep(t, 1, OutputEvent("f", "done"))
    history = [{"id": "u1", "role": "user", "content": "go"}]
    events = t.finish(RunStatus.IDLE, transcript=history, state={"k": 1})
    assert _types(events) == ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    wire = _wire(events)
    assert wire[0]["snapshot"] == {"k": 1}
    assert [m["id"] for m in wire[1]["messages"]] == ["u1", "m1"]
    assert wire[2] == {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "run-1",
                       "outcome": {"type": "success"}, "timestamp": NOW}
    assert t.finished


def test_finish_awaiting_responses_has_one_interrupt_per_pending_request() -> None:
    t = _translator()
    views = [
        {"request_id": "req-a", "data": {"question": "publish?"},
         "response_schema": {"type": "boolean"}, "source_executor_id": "reviewer"},
        {"request_id": "req-b", "data": [1, 2], "response_schema": {"type": "integer"},
         "source_executor_id": "counter"},
    ]
    token = {"checkpointId": "cp", "snapshotId": "s1"}
    events = t.finish(RunStatus.AWAITING_RESPONSES, pending=views, resume_token=token)
    outcome = _wire(events)[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    first, second = outcome["interrupts"]
    assert first == {
        "id": "req-a", "reason": "input_required", "message": "publish?",
        "responseSchema": {"type": "boolean"},
        "metadata": {"checkflow": {"requestData": {"question": "publish?"},
                                   "sourceExecutorId": "reviewer", "resumeToken": token}},
    }
    assert second["id"] == "req-b" and "message" not in second


def test_finish_cancelled_is_the_cancelled_outcome() -> None:
    t = _translator()
    events = t.finish(RunStatus.CANCELLED)
    assert _wire(events)[-1]["outcome"] == {"type": "cancelled"}


def test_awaiting_without_pending_requests_is_never_an_empty_interrupt() -> None:
    events = _translator().finish(RunStatus.AWAITING_RESPONSES, pending=[])
    assert _wire(events)[-1]["outcome"] == {"type": "success"}


def test_error_closes_open_triads_then_ends_with_run_error() -> None:
    t = _translator()
    t.translate(SuperstepStartedEvent(superstep=1))
    t.translate(AgentRunUpdateEvent("a", AgentResponseUpdate((TextContent("x"),))))
    events = t.error("workflow_failed", "boom")
    assert _types(events) == ["TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_ERROR"]
    assert _wire(events)[-1] == {"type": "RUN_ERROR", "message": "boom",
                                 "code": "workflow_failed", "timestamp": NOW}


def test_a_stamped_event_carries_its_emission_time_in_milliseconds() -> None:
    t = _translator()
    event = SuperstepStartedEvent(superstep=1, sequence=3)
    event.timestamp = datetime(2026, 12, 1, 12, 0, 0, 250_000, tzinfo=UTC)
    (started,) = t.translate(event)
    assert started.timestamp == int(event.timestamp.timestamp() * 1000)
    assert started.timestamp % 1000 == 250


def test_every_event_of_every_ending_carries_a_timestamp_the_models_accept() -> None:
    views = [{"request_id": "req-a", "data": "ok?", "response_schema": {"type": "boolean"},
              "source_executor_id": "reviewer"}]
    endings = [
        lambda t: t.finish(RunStatus.IDLE, transcript=[], state={"k": 1}),
        lambda t: t.finish(RunStatus.AWAITING_RESPONSES, pending=views),
        lambda t: t.finish(RunStatus.CANCELLED),
        lambda t: t.error("workflow_failed", "boom", transcript=[]),
    ]
    for end in endings:
        t = _translator()
        update = AgentRunUpdateEvent("a", AgentResponseUpdate((TextContent("x"),)))
        stamped = OutputEvent("f", "done", sequence=4)
        stamped.timestamp = datetime(2026, 12, 1, tzinfo=UTC)
        events = [t.started(), *t.translate(SuperstepStartedEvent(superstep=1)),
                  *t.translate(update), *t.translate(stamped), *end(t)]
        later = False
        for wire in _wire(events):
            parsed = EVENT.validate_python(wire)  # the AG-UI 1.0 models, as a consumer reads it
            assert isinstance(parsed.timestamp, int), wire
            later = later or wire.get("messageId") == "m2"
            expected = 1_796_083_200_000 if later else NOW
            assert parsed.timestamp == expected, wire  # the output's own time, else now,
            # never earlier than an event already sent


def test_timestamps_never_go_back_in_one_stream() -> None:
    """A workflow event keeps the time it happened; one made as it is sent (the state)
    comes first on the wire although it is a moment later: the next is stamped no earlier."""
    clock = iter([100, 205, 300])
    t = RunTranslator("t", "r", clock=lambda: next(clock))
    step = SuperstepStartedEvent(superstep=1, sequence=2)
    step.timestamp = datetime.fromtimestamp(0.2, tz=UTC)  # 200 ms: before the state's 205
    events = [t.started(), *t.state({"k": 1}), *t.translate(step), *t.finish(RunStatus.IDLE)]
    stamps = [e.timestamp for e in events]
    assert stamps[:3] == [100, 205, 205] and stamps == sorted(stamps), stamps


def test_a_followed_event_numbered_but_never_stamped_by_a_run_is_stamped_now() -> None:
    t = _translator()
    followed = OutputEvent("", "told", sequence=5)  # how a follower elsewhere numbers events
    assert {e.timestamp for e in t.translate(followed)} == {NOW}


def test_the_default_clock_is_milliseconds_since_the_epoch() -> None:
    before = time.time_ns() // 1_000_000
    stamp = RunTranslator("t", "r").started().timestamp
    after = time.time_ns() // 1_000_000
    assert stamp is not None and before <= stamp <= after


def test_no_event_carries_a_null_optional() -> None:
    t = _translator()
    events = [t.started(), *_superstep(t, 1, OutputEvent("f", "x")), *t.finish(RunStatus.IDLE)]
    for wire in _wire(events):
        assert None not in wire.values(), wire


@pytest.mark.parametrize(
    ("data", "expected"),
    [("Approve?", "Approve?"), ({"question": "Q"}, "Q"), ({"prompt": "P"}, "P"),
     ({"other": "x"}, None), (3, None), ("", None)],
)
def test_interrupt_message_comes_from_text_in_the_request_data(data: Any, expected: Any) -> None:
    assert interrupt_message(data) == expected
