"""Responses events and objects as built: schema-valid, numbered, balanced, one terminal."""

from __future__ import annotations

import json

import openresponses_types as ort
import pytest
from foundry_schema import (
    assert_well_formed,
    validate_event,
    validate_foundry_response,
    validate_response,
)
from pydantic import ValidationError

from checkflow.adapters.foundry._events import EventBuilder
from checkflow.adapters.foundry._objects import NO_USAGE, request_arguments, response_object


def _response(builder: EventBuilder, status: str) -> dict:
    return response_object(id=builder.response_id, created_at=1700000000, status=status,
                           model="checkflow", output=list(builder.output),
                           conversation_id="conv_1")


def _complete_stream(status: str = "completed") -> list[dict]:
    builder = EventBuilder("resp_abc")
    events = builder.start(lambda s: _response(builder, s))
    events += builder.open_message()
    events += [builder.text_delta("Hel"), builder.text_delta("lo")]
    events += builder.close_message()
    events += builder.message("second")
    events += builder.function_call("req-1", request_arguments("req-1", {"q": 1}, {}))
    events.append(builder.finish(_response(builder, status)))
    return events


def test_a_full_stream_is_schema_valid_numbered_from_0_and_balanced() -> None:
    events = _complete_stream()
    assert_well_formed(events)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))  # as OpenAI
    final = events[-1]["response"]
    assert [item["type"] for item in final["output"]] == ["message", "message", "function_call"]
    assert final["output"][0]["content"][0]["text"] == "Hello"
    call = final["output"][2]
    assert call["name"] == "request_info" and call["call_id"] == "req-1"
    assert json.loads(call["arguments"]) == {"request_id": "req-1", "data": {"q": 1},
                                             "response_schema": {}}


@pytest.mark.parametrize("status", ["completed", "failed", "incomplete", "cancelled"])
def test_every_final_status_ends_with_one_valid_terminal_event(status: str) -> None:
    events = _complete_stream(status)
    assert_well_formed(events)
    assert events[-1]["response"]["status"] == status


def test_item_ids_are_derived_so_a_replay_names_the_same_items() -> None:
    assert _complete_stream() == _complete_stream()


def test_a_stream_cannot_end_with_a_message_open() -> None:
    builder = EventBuilder("resp_x")
    builder.start(lambda s: _response(builder, s))
    builder.open_message()
    with pytest.raises(RuntimeError, match="still open"):
        builder.finish(_response(builder, "completed"))


def test_nothing_follows_the_terminal_event() -> None:
    builder = EventBuilder("resp_x")
    builder.start(lambda s: _response(builder, s))
    builder.finish(_response(builder, "completed"))
    with pytest.raises(RuntimeError, match="terminal"):
        builder.message("late")


def test_output_before_created_is_refused() -> None:
    with pytest.raises(RuntimeError, match="created"):
        EventBuilder("resp_x").message("early")


def test_the_terminal_response_must_show_the_streamed_items() -> None:
    builder = EventBuilder("resp_x")
    builder.start(lambda s: _response(builder, s))
    builder.message("shown")
    with pytest.raises(RuntimeError, match="differs"):
        builder.finish(response_object(id="resp_x", created_at=1, status="completed",
                                       model="m", output=[], conversation_id=None))


def test_a_queued_start_is_valid() -> None:
    builder = EventBuilder("resp_q")
    events = builder.start(lambda s: _response(builder, s), queued=True)
    assert [e["type"] for e in events] == ["response.created", "response.queued"]
    for event in events:
        validate_event(event)


def test_a_failed_response_with_its_error_is_a_valid_response() -> None:
    body = response_object(id="resp_f", created_at=1, status="failed", model="m", output=[],
                           conversation_id="c", completed_at=2,
                           error={"code": "server_error", "message": "boom"})
    assert validate_response(body).error is not None


def test_the_arguments_done_event_names_the_function() -> None:
    (done,) = [e for e in _complete_stream()
               if e["type"] == "response.function_call_arguments.done"]
    assert done["name"] == "request_info" and done["item_id"].startswith("fc_")


def test_usage_is_zeros_until_reported_and_completed_at_only_on_a_completed_response() -> None:
    usage = {"input_tokens": 3,
             "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
             "output_tokens": 4, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 7}
    for status in ("completed", "failed", "incomplete", "cancelled", "in_progress"):
        body = response_object(id="resp_u", created_at=1, status=status, model="m",
                               output=[], conversation_id="c", completed_at=2)
        validate_response(body)
        assert body["usage"] == NO_USAGE and body["usage"]["total_tokens"] == 0
        assert body["completed_at"] == (2 if status == "completed" else None)
    body = response_object(id="resp_u", created_at=1, status="completed", model="m",
                           output=[], conversation_id="c", usage=usage)
    assert validate_response(body).usage.total_tokens == 7


def test_the_placeholder_is_zeros_because_foundrys_models_refuse_null_usage() -> None:
    body = response_object(id="resp_n", created_at=1, status="completed", model="m",
                           output=[], conversation_id="c")
    with pytest.raises(ValidationError, match="usage"):
        validate_foundry_response({**body, "usage": None})
    with pytest.raises(ValidationError, match="usage"):  # and openresponses-types needs it
        ort.ResponseResource.model_validate({k: v for k, v in body.items() if k != "usage"})


def test_agent_reference_is_null_outside_a_container_and_required_by_foundry() -> None:
    body = response_object(id="resp_a", created_at=1, status="completed", model="m",
                           output=[], conversation_id="c")
    assert body["agent_reference"] is None
    with pytest.raises(ValidationError, match="agent_reference"):
        validate_foundry_response({k: v for k, v in body.items() if k != "agent_reference"})
    named = response_object(id="resp_a", created_at=1, status="completed", model="m",
                            output=[], conversation_id="c",
                            agent_reference={"type": "agent_reference", "name": "a",
                                             "version": "3"})
    validate_response(named)
