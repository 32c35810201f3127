"""Validation of what the Foundry adapter sends, against three published models of it.

Every body and every streamed event a test sees goes through ``validate_response`` /
``validate_event`` (and errors, deletions and input item pages through their own), each of
which checks it against:

- Foundry's own models (``azure.ai.agentserver.responses.models``: TypedDicts, validated
  strictly with pydantic), the models of the host Foundry hosted agents run on;
- ``openresponses-types`` (pydantic models of the Open Responses schema);
- the ``openai`` package's types (``openai.types.responses``).

openresponses-types has no MCP items, so an ``mcp_approval_request`` output item is checked
against the other two and left out of the body openresponses-types sees; nor does it (or
``openai``) model a deletion or an input item page: those are checked against what has them.
"""

from __future__ import annotations

import typing
from functools import cache
from typing import Any

import openai.types.responses as oai
import openresponses_types as ort
from azure.ai.agentserver.responses import models as foundry
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
NOT_IN_OPENRESPONSES = {"mcp_approval_request"}  # output item types openresponses-types lacks

_openai_events: TypeAdapter[Any] = TypeAdapter(oai.ResponseStreamEvent)
_openai_items = TypeAdapter(oai.ResponseItemList)
_openai_output_item: TypeAdapter[Any] = TypeAdapter(oai.ResponseOutputItem)


@cache
def _foundry(model: Any) -> TypeAdapter[Any]:
    return TypeAdapter(model)


def _foundry_strict(model: Any, value: Any) -> None:
    _foundry(model).validate_python(value, strict=True)


@cache
def _foundry_events() -> dict[str, Any]:
    """Foundry's event TypedDict for each event ``type``."""
    models = {}
    for model in typing.get_args(foundry.ResponseStreamEvent):
        annotation = model.__annotations__["type"]  # Required[Literal["response.created"]]
        while typing.get_origin(annotation) is not typing.Literal:
            (annotation,) = typing.get_args(annotation)
        (literal,) = typing.get_args(annotation)
        models[literal] = model
    return models


_TIMESTAMPS = ("created_at", "completed_at")


def _wire_timestamps(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with its timestamps as the wire has them: the ``openai`` types hold them as
    floats, so an event read back with ``to_dict()`` says ``1.0`` where the server sent
    ``1`` (an integral float only; any other value is left for the models to refuse)."""
    fixed = {key: int(body[key]) for key in _TIMESTAMPS
             if isinstance(body.get(key), float) and body[key].is_integer()}
    return {**body, **fixed}


def validate_foundry_response(body: dict[str, Any]) -> None:
    """``body`` against Foundry's ``ResponseObject`` (``agent_reference`` is required)."""
    _foundry_strict(foundry.ResponseObject, _wire_timestamps(body))


def validate_response(body: dict[str, Any]) -> ort.ResponseResource:
    """``body`` as a Response resource in all three models (raises ``ValidationError`` if a
    field is wrong); the openresponses-types form of it."""
    oai.Response.model_validate(body)
    validate_foundry_response(body)
    for item in body["output"]:
        if item["type"] in NOT_IN_OPENRESPONSES:
            _openai_output_item.validate_python(item)
    known = [item for item in body["output"] if item["type"] not in NOT_IN_OPENRESPONSES]
    return ort.ResponseResource.model_validate({**body, "output": known})


def validate_event(event: dict[str, Any]) -> BaseModel:
    """``event`` as the streaming event model its ``type`` names, in all three models; its
    openresponses-types form."""
    _openai_events.validate_python(event)
    wire = {**event, "response": _wire_timestamps(event["response"])} if "response" in event \
        else event
    _foundry_strict(_foundry_events()[event["type"]], wire)
    if "response" in event:
        validate_response(event["response"])
    item = event.get("item")
    if isinstance(item, dict) and item["type"] in NOT_IN_OPENRESPONSES:
        _openai_output_item.validate_python(item)
        return _openai_events.validate_python(event)  # type: ignore[no-any-return]
    model = EVENT_MODELS[event["type"]]
    if "response" in event:  # openresponses-types sees the items it has
        response = event["response"]
        event = {**event, "response": {**response, "output": [
            item for item in response["output"] if item["type"] not in NOT_IN_OPENRESPONSES]}}
    return model.model_validate(event)


def validate_error(body: dict[str, Any]) -> ort.Error:
    """An OpenAI error envelope: all four keys present, ``message`` and ``type`` strings;
    Foundry's ``ApiErrorResponse`` too."""
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    assert isinstance(body["error"]["message"], str) and isinstance(body["error"]["type"], str)
    _foundry_strict(foundry.ApiErrorResponse, body)
    return ort.Error.model_validate({**body["error"], "code": body["error"]["code"] or ""})


def validate_deleted(body: dict[str, Any]) -> None:
    """A deletion: Foundry's ``DeleteResponseResult`` (``openai`` returns nothing for it and
    openresponses-types has no such shape), and nothing more than its three keys."""
    _foundry_strict(foundry.DeleteResponseResult, body)
    assert set(body) == {"id", "object", "deleted"}, body


def validate_input_items(body: dict[str, Any]) -> oai.ResponseItemList:
    """An input item page: ``openai``'s ``ResponseItemList``, each item Foundry's
    ``ItemField`` (openresponses-types has no page)."""
    for item in body["data"]:
        _foundry_strict(foundry.ItemField, item)
    return _openai_items.validate_python(body)


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
    final = events[-1]["response"]
    assert [item["id"] for item in final["output"]] == [added[i] for i in sorted(added)]
