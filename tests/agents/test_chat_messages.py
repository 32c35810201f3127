"""ChatMessage, its contents and AgentResponse: shapes, shorthands and the codec."""

from __future__ import annotations

import pytest

from checkflow import state
from checkflow.agents import (
    AgentResponse,
    AgentResponseUpdate,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    UserInputRequestContent,
)
from checkflow.agents._messages import normalize_messages


def test_a_plain_str_is_one_text_content() -> None:
    assert ChatMessage("user", "hi").contents == (TextContent("hi"),)


def test_a_single_content_is_accepted_without_a_list() -> None:
    request = UserInputRequestContent("r1", {"q": "ok?"})
    assert ChatMessage("assistant", request).contents == (request,)


def test_text_joins_only_the_text_contents() -> None:
    message = ChatMessage(
        "assistant", [TextContent("a"), FunctionCallContent("c", "f", {}), TextContent("b")]
    )
    assert message.text == "ab"


def test_an_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="'robot'"):
        ChatMessage("robot", "hi")  # type: ignore[arg-type]


def test_a_foreign_content_object_is_refused() -> None:
    with pytest.raises(TypeError, match="dict"):
        ChatMessage("user", [{"text": "hi"}])  # type: ignore[list-item]


def test_a_message_is_immutable() -> None:
    message = ChatMessage("user", "hi")
    with pytest.raises(AttributeError):
        message.role = "assistant"  # type: ignore[misc]


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_every_content_kind_round_trips_through_the_codec(fmt: str) -> None:
    message = ChatMessage(
        "assistant",
        [
            TextContent("t"),
            FunctionCallContent("c1", "lookup", {"ids": (1, 2), "deep": {"x": None}}),
            FunctionResultContent("c1", {"rows": [1.5, "a"]}),
            UserInputRequestContent("r1", {"question": "publish?"}),
        ],
    )
    data = state.encode([message], format=fmt)  # type: ignore[arg-type]
    assert state.decode(data, format=fmt) == [message]  # type: ignore[arg-type]


def test_contents_have_stable_type_ids() -> None:
    tree = state.to_builtins(ChatMessage("tool", FunctionResultContent("c", 1)))
    assert tree["$type"] == "checkflow.ChatMessage"
    assert tree["$value"]["contents"][0]["$type"] == "checkflow.FunctionResultContent"


def test_normalize_accepts_a_str_a_message_or_a_mixed_list() -> None:
    system = ChatMessage("system", "be brief")
    assert normalize_messages("hi") == [ChatMessage("user", "hi")]
    assert normalize_messages(system) == [system]
    assert normalize_messages([system, "hi"]) == [system, ChatMessage("user", "hi")]


def test_normalize_refuses_anything_else() -> None:
    with pytest.raises(TypeError, match="int"):
        normalize_messages([1])  # type: ignore[list-item]


def test_response_from_updates_merges_text_deltas_into_one_message() -> None:
    call = FunctionCallContent("c", "f", {"a": 1})
    response = AgentResponse.from_updates(
        [
            AgentResponseUpdate((TextContent("Hel"),), author_name="bot"),
            AgentResponseUpdate((TextContent("lo"),)),
            AgentResponseUpdate((call,)),
        ]
    )
    assert response.messages == [ChatMessage("assistant", [TextContent("Hello"), call])]
    assert response.text == "Hello"
    assert response.function_calls == [call]
    assert response.author_name == "bot"


def test_response_from_updates_starts_a_message_when_the_role_changes() -> None:
    response = AgentResponse.from_updates(
        [
            AgentResponseUpdate((TextContent("a"),), role="assistant"),
            AgentResponseUpdate((FunctionResultContent("c", 1),), role="tool"),
        ]
    )
    assert [m.role for m in response.messages] == ["assistant", "tool"]


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_responses_and_updates_round_trip_through_the_codec(fmt: str) -> None:
    response = AgentResponse([ChatMessage("assistant", "done")], author_name="bot")
    update = AgentResponseUpdate((TextContent("do"),), author_name="bot")
    data = state.encode([response, update], format=fmt)  # type: ignore[arg-type]
    assert state.decode(data, format=fmt) == [response, update]  # type: ignore[arg-type]
