"""Validation of what the Foundry adapter sends, against ``openresponses-types``.

Every body and every streamed event a test sees goes through ``validate_response`` /
``validate_event`` (``openai.types.responses`` for the shapes openresponses-types lacks:
input item lists and approval items).
"""

from __future__ import annotations

from typing import Any

import openai.types.responses as oai
import openresponses_types as ort
from pydantic import BaseModel, TypeAdapter

EVENT_MODELS: dict[str, type[BaseModel]] = {
    "response.created": ort.ResponseCreatedStreamingEvent,
    "response.queued": ort.ResponseQueuedStreamingEvent,
    "response.in_progress": ort.ResponseInProgressStreamingEvent,
    "response.completed": ort.ResponseCompletedStreamingEvent,
    "response.failed": ort.ResponseFailedStreamingEvent,
    "response.incomplete": ort.ResponseIncompleteStreamingEvent,
    "response.output_item.added": ort.ResponseOutputItemAddedStreamingEvent,
    "response.output_item.done": ort.ResponseOutputItemDoneStreamingEvent,
    "response.content_part.added": ort.ResponseContentPartAddedStreamingEvent,
    "response.content_part.done": ort.ResponseContentPartDoneStreamingEvent,
    "response.output_text.delta": ort.ResponseOutputTextDeltaStreamingEvent,
    "response.output_text.done": ort.ResponseOutputTextDoneStreamingEvent,
    "response.function_call_arguments.delta":
        ort.ResponseFunctionCallArgumentsDeltaStreamingEvent,
    "response.function_call_arguments.done": ort.ResponseFunctionCallArgumentsDoneStreamingEvent,
    "error": ort.ErrorStreamingEvent,
}

_items = TypeAdapter(oai.ResponseItemList)


def validate_response(body: dict[str, Any]) -> ort.ResponseResource:
    """``body`` as a Response resource (raises ``ValidationError`` if a field is wrong)."""
    oai.Response.model_validate(body)
    return ort.ResponseResource.model_validate(body)


def validate_event(event: dict[str, Any]) -> BaseModel:
    """``event`` as the streaming event model its ``type`` names."""
    model = EVENT_MODELS[event["type"]]
    parsed = model.model_validate(event)
    if "response" in event:
        validate_response(event["response"])
    return parsed


def validate_error(body: dict[str, Any]) -> ort.Error:
    """An OpenAI error envelope: all four keys present, ``message`` and ``type`` strings."""
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    assert isinstance(body["error"]["message"], str) and isinstance(body["error"]["type"], str)
    return ort.Error.model_validate({**body["error"], "code": body["error"]["code"] or ""})


def validate_input_items(body: dict[str, Any]) -> oai.ResponseItemList:
    return _items.validate_python(body)


def assert_well_formed(events: list[dict[str, Any]]) -> None:
    """Numbers strictly increase; one identity per output index; every added has its done;
    exactly one terminal event, last."""
    numbers = [e["sequence_number"] for e in events]
    assert numbers == sorted(set(numbers)), numbers
    assert events[0]["type"] == "response.created"
    terminal = {"response.completed", "response.failed", "response.incomplete"}
    assert [e["type"] in terminal for e in events].count(True) == 1
    assert events[-1]["type"] in terminal
    added: dict[int, str] = {}
    done: dict[int, str] = {}
    for event in events:
        validate_event(event)
        if event["type"] == "response.output_item.added":
            assert event["output_index"] not in added
            added[event["output_index"]] = event["item"]["id"]
        elif event["type"] == "response.output_item.done":
            assert added.get(event["output_index"]) == event["item"]["id"]
            done[event["output_index"]] = event["item"]["id"]
        elif "output_index" in event:
            assert added.get(event["output_index"]) == event["item_id"]
            assert event["output_index"] not in done
    assert added == done
    final = events[-1]["response"]["output"]
    assert [item["id"] for item in final] == [added[i] for i in sorted(added)]
