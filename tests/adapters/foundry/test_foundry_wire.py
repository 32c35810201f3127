"""The create-response body: every refusal is a 400 naming its field; replies are parsed."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from checkflow.adapters.foundry._errors import ResponsesError
from checkflow.adapters.foundry._wire import CreateResponseBody, parse_request
from checkflow.agents import ClientTool


def _parse(body: dict[str, Any]):
    return parse_request(msgspec.convert(body, CreateResponseBody, strict=True))


def _refused(body: dict[str, Any]) -> ResponsesError:
    with pytest.raises(ResponsesError) as caught:
        _parse(body)
    assert caught.value.status == 400
    assert caught.value.type == "invalid_request_error"
    return caught.value


def test_a_string_input_is_one_user_message() -> None:
    request = _parse({"input": "hello"})
    assert [(m.role, m.text) for m in request.messages] == [("user", "hello")]
    assert request.items[0]["content"] == [{"type": "input_text", "text": "hello"}]
    assert request.store and not request.stream and not request.background


def test_messages_without_a_type_and_with_content_parts_are_accepted() -> None:
    request = _parse({"input": [
        {"role": "system", "content": "be brief"},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]},
    ]})
    assert [(m.role, m.text) for m in request.messages] == [("system", "be brief"), ("user", "ab")]


def test_a_function_call_output_is_parsed_as_json_first() -> None:
    request = _parse({"previous_response_id": "resp_1", "input": [
        {"type": "function_call_output", "call_id": "c1", "output": "true"},
        {"type": "function_call_output", "call_id": "c2", "output": "not json"},
        {"type": "function_call_output", "call_id": "c3",
         "output": [{"type": "input_text", "text": "{\"n\": 1}"}]},
    ]})
    assert [(r.call_id, r.value) for r in request.replies] == [
        ("c1", True), ("c2", "not json"), ("c3", {"n": 1})]


def test_an_approval_response_answers_with_its_boolean() -> None:
    request = _parse({"previous_response_id": "resp_1", "input": [
        {"type": "mcp_approval_response", "approval_request_id": "c1", "approve": False}]})
    assert [(r.call_id, r.value) for r in request.replies] == [("c1", False)]


@pytest.mark.parametrize(("body", "param"), [
    ({"input": "x", "stream_options": {"include_obfuscation": False}}, "stream_options"),
    ({"input": "x", "stream": False, "stream_options": {}}, "stream_options"),
    ({"input": "x", "background": True, "store": False}, "background"),
    ({"input": "x", "conversation": "c", "previous_response_id": "r"}, "previous_response_id"),
    ({"input": "x", "conversation": {"id": "c"}, "previous_response_id": "r"},
     "previous_response_id"),
    ({}, "input"),
    ({"input": []}, "input"),
    ({"input": [{"type": "message", "role": "robot", "content": "x"}]}, "input[0].role"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]},
     "input[0].content[0].type"),
    ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0].type"),
    ({"input": [{"type": "function_call_output", "call_id": "", "output": "1"}],
      "previous_response_id": "r"}, "input[0].call_id"),
    ({"input": "x", "metadata": {str(i): "v" for i in range(17)}}, "metadata"),
    ({"input": "x", "metadata": {"k": "v" * 513}}, "metadata.k"),
])
def test_a_refused_body_names_its_field(body: dict[str, Any], param: str) -> None:
    assert _refused(body).param == param


def test_replies_without_previous_response_id_are_refused_naming_the_calls() -> None:
    error = _refused({"input": [{"type": "function_call_output", "call_id": "c9", "output": "1"}]})
    assert "c9" in error.message and error.param == "previous_response_id"


def test_the_same_call_answered_twice_is_refused_naming_it() -> None:
    error = _refused({"previous_response_id": "r", "input": [
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
        {"type": "function_call_output", "call_id": "c1", "output": "2"}]})
    assert "c1" in error.message and error.param == "input"


def test_replies_mixed_with_new_messages_are_refused_naming_the_calls() -> None:
    error = _refused({"previous_response_id": "r", "input": [
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
        {"role": "user", "content": "and also"}]})
    assert "c1" in error.message and error.param == "input"


def test_a_branch_is_asked_for_with_a_metadata_key_and_previous_response_id() -> None:
    request = _parse({"input": "x", "previous_response_id": "resp_a",
                      "metadata": {"checkflow.branch": "true"}})
    assert request.branch and request.metadata == {"checkflow.branch": "true"}
    assert not _parse({"input": "x", "previous_response_id": "resp_a",
                       "metadata": {"checkflow.branch": "false"}}).branch
    assert not _parse({"input": "x", "previous_response_id": "resp_a"}).branch


def test_a_branch_key_with_another_value_or_nothing_to_branch_from_is_refused() -> None:
    error = _refused({"input": "x", "previous_response_id": "resp_a",
                      "metadata": {"checkflow.branch": "yes"}})
    assert error.param == "metadata.checkflow.branch" and "'yes'" in error.message
    error = _refused({"input": "x", "metadata": {"checkflow.branch": "true"}})
    assert error.param == "previous_response_id"
    assert error.code == "missing_required_parameter"


def test_function_tools_become_client_tools_and_other_tools_are_ignored() -> None:
    weather = {"type": "object", "properties": {"city": {"type": "string"}}}
    request = _parse({"input": "x", "tools": [
        {"type": "function", "name": "weather", "description": "The weather.",
         "parameters": weather, "strict": True},
        {"type": "web_search"},
        {"type": "function", "name": "ping", "description": None}]})
    assert request.client_tools == [
        ClientTool(name="weather", description="The weather.", parameters=weather),
        ClientTool(name="ping")]
    assert _parse({"input": "x"}).client_tools == []  # none declared: an empty list


@pytest.mark.parametrize(("tools", "param"), [
    ([{"name": "f"}], "tools[0].type"),
    ([{"type": "function"}], "tools[0]"),
    ([{"type": "function", "name": "two words"}], "tools[0].name"),
    ([{"type": "function", "name": "f", "parameters": []}], "tools[0].parameters"),
    ([{"type": "function", "name": "f"}, {"type": "function", "name": "f"}], "tools[1].name"),
])
def test_a_malformed_function_tool_is_refused_naming_it(tools: list[Any], param: str) -> None:
    assert _refused({"input": "x", "tools": tools}).param == param


def test_an_approval_is_read_as_a_yes_no_then_as_a_tool_approval() -> None:
    request = _parse({"previous_response_id": "resp_1", "input": [
        {"type": "mcp_approval_response", "approval_request_id": "c1", "approve": False,
         "reason": "no"},
        {"type": "mcp_approval_response", "approval_request_id": "c2", "approve": True},
        {"type": "function_call_output", "call_id": "c3", "output": "7"},
        {"type": "function_call_output", "call_id": "c4", "output": "seven"}]})
    assert [(r.call_id, r.readings, r.approval) for r in request.replies] == [
        ("c1", (False, {"approved": False, "reason": "no"}), True),
        ("c2", (True, {"approved": True}), True),
        ("c3", (7, "7"), False), ("c4", ("seven",), False)]
