"""What a RunAgentInput asks of the host: de-duplicated input, resume answers, options."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import (
    AssistantMessage,
    DeveloperMessage,
    ResumeEntry,
    TextPart,
    ToolMessage,
    UserMessage,
)

from checkflow.adapters.agui._input import (
    CheckflowOptions,
    ResumeViolation,
    chat_messages,
    latest_user_text,
    new_messages,
    options_from,
    resume_responses,
    wire_message,
)
from checkflow.agents import ChatMessage, FunctionResultContent
from checkflow.workflows import RequestCancelled


def _user(id: str, text: str) -> UserMessage:
    return UserMessage(id=id, content=text)


def _entry(id: str, status: str = "resolved", payload: Any = None) -> ResumeEntry:
    return ResumeEntry(interrupt_id=id, status=status, payload=payload)  # type: ignore[arg-type]


# -- de-duplication ---------------------------------------------------------------------------


def test_messages_the_thread_has_seen_are_not_new() -> None:
    history = [_user("u1", "one"), AssistantMessage(id="a1", content="ONE"), _user("u2", "two")]
    assert [m.id for m in new_messages(history, {"u1", "a1"})] == ["u2"]


def test_only_what_follows_the_last_seen_message_is_new() -> None:
    # history older than what the thread knows of (an agent host keeps its latest turns)
    history = [_user("old", "long ago"), _user("u1", "one"), _user("u2", "two")]
    assert [m.id for m in new_messages(history, {"u1"})] == ["u2"]
    assert [m.id for m in new_messages(history, set())] == ["old", "u1", "u2"]


def test_a_resent_history_with_nothing_new_is_empty() -> None:
    history = [_user("u1", "one"), AssistantMessage(id="a1", content="ONE")]
    assert new_messages(history, {"u1", "a1"}) == []


def test_an_id_repeated_within_one_request_counts_once() -> None:
    assert [m.id for m in new_messages([_user("u1", "x"), _user("u1", "x")], set())] == ["u1"]


def test_the_latest_user_text_skips_later_assistant_messages() -> None:
    messages = [_user("u1", "first"), _user("u2", "second"), AssistantMessage(id="a", content="x")]
    assert latest_user_text(messages) == "second"
    assert latest_user_text([AssistantMessage(id="a", content="x")]) is None


def test_user_content_parts_contribute_their_text() -> None:
    message = UserMessage(id="u", content=[TextPart(text="a"), TextPart(text="b")])
    assert latest_user_text([message]) == "ab"


def test_chat_messages_map_roles() -> None:
    messages = [
        _user("u", "hi"),
        DeveloperMessage(id="d", content="be brief"),
        AssistantMessage(id="a", content="hello"),
        ToolMessage(id="t", content="42", tool_call_id="call-1"),
    ]
    assert chat_messages(messages) == [
        ChatMessage("user", "hi"),
        ChatMessage("system", "be brief"),
        ChatMessage("assistant", "hello"),
        ChatMessage("tool", FunctionResultContent("call-1", "42")),
    ]


def test_wire_message_is_camel_case_without_nulls() -> None:
    message = ToolMessage(id="t", content="42", tool_call_id="call-1")
    assert wire_message(message) == {"id": "t", "role": "tool", "content": "42",
                                     "toolCallId": "call-1"}


# -- resume -----------------------------------------------------------------------------------


def test_no_resume_and_no_interrupts_is_no_responses() -> None:
    assert resume_responses(None, set(), set(), has_input=True) is None


def test_a_reconnect_without_input_or_resume_is_allowed_with_interrupts_open() -> None:
    assert resume_responses([], {"r1"}, {"r1"}, has_input=False) is None


def test_resume_answers_every_open_interrupt() -> None:
    responses = resume_responses([_entry("r1", payload=True), _entry("r2", payload=3)],
                                 {"r1", "r2"}, {"r1", "r2"}, has_input=False)
    assert responses == {"r1": True, "r2": 3}


def test_cancelled_answers_with_request_cancelled() -> None:
    responses = resume_responses([_entry("r1", "cancelled")], {"r1"}, {"r1"}, has_input=False)
    assert responses == {"r1": RequestCancelled()}


@pytest.mark.parametrize(
    ("entries", "open_ids", "issued", "has_input", "code"),
    [
        (None, {"r1"}, {"r1"}, True, "resume_required"),
        ([_entry("r1", payload=1)], {"r1", "r2"}, {"r1", "r2"}, False, "resume_incomplete"),
        ([_entry("r1", payload=1), _entry("zz", payload=1)], {"r1"}, {"r1"}, False,
         "unknown_interrupt"),
        ([_entry("r1", payload=1), _entry("r1", payload=2)], {"r1"}, {"r1"}, False,
         "duplicate_interrupt"),
        ([_entry("r1", payload=1)], set(), {"r1"}, False, "already_resolved"),
        ([_entry("r1", payload=1)], set(), set(), False, "unknown_interrupt"),
        ([_entry("r1", payload=1)], {"r1"}, {"r1"}, True, "input_with_resume"),
    ],
)
def test_each_resume_violation_has_its_own_code(
    entries: Any, open_ids: set[str], issued: set[str], has_input: bool, code: str
) -> None:
    with pytest.raises(ResumeViolation) as caught:
        resume_responses(entries, open_ids, issued, has_input=has_input)
    assert caught.value.code == code
    assert caught.value.message


# -- forwardedProps.checkflow ------------------------------------------------------------------


def test_options_default_when_absent() -> None:
    assert options_from(None) == CheckflowOptions()
    assert options_from({"other": 1}) == CheckflowOptions()


def test_options_read_from_snapshot_and_resume_token() -> None:
    props = {"checkflow": {"fromSnapshot": "s1",
                           "resumeToken": {"checkpointId": "cp", "snapshotId": "s2"}}}
    assert options_from(props) == CheckflowOptions("s1", ("cp", "s2"))


@pytest.mark.parametrize(
    ("props", "field"),
    [({"checkflow": 3}, "forwardedProps.checkflow"),
     ({"checkflow": {"fromSnapshot": 3}}, "fromSnapshot"),
     ({"checkflow": {"resumeToken": {"checkpointId": "cp"}}}, "resumeToken")],
)
def test_badly_shaped_options_name_the_field(props: Any, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        options_from(props)
