"""Response ids name their conversation and turn; idempotency keys come from the request."""

from __future__ import annotations

import msgspec
import pytest

from checkflow.adapters.foundry._ids import parse_response_id, response_id
from checkflow.adapters.foundry._origin import (
    ResponseOrigin,
    idempotency_key,
    keyed_conversation,
    origin_of,
    turn_origin,
)
from checkflow.adapters.foundry._wire import CreateResponseBody, parse_request

TURN = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize("conversation", ["conv_1", "talk-1", "a_b_c", "ünï çødé", "x" * 300])
def test_a_response_id_gives_back_its_conversation_and_turn(conversation: str) -> None:
    rid = response_id(conversation, TURN)
    assert rid.startswith("resp_") and "/" not in rid and "=" not in rid
    assert parse_response_id(rid) == (conversation, TURN)


@pytest.mark.parametrize("value", [
    "resp_1", "resp_nope", "caresp_abc", "", "resp_", "resp__" + TURN,
    "resp_Y29udl8x_" + TURN.upper(), "resp_Y29udl8x_" + TURN[:-1], "resp_!!!!_" + TURN,
    "resp_Y29udl8x=_" + TURN,  # padded: not the one spelling of that response
    "resp_/w_" + TURN,  # not UTF-8
])
def test_anything_else_is_no_response_id(value: str) -> None:
    assert parse_response_id(value) is None


def test_a_turn_id_must_be_the_hosts_32_hex_digits() -> None:
    with pytest.raises(ValueError, match="32 hex digits"):
        response_id("c", "turn-1")


def _request(body: dict) -> object:
    return parse_request(msgspec.convert(body, CreateResponseBody, strict=True))


def _reply(call_id: str, output: str = "true") -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def test_the_header_is_the_key_when_sent() -> None:
    request = _request({"input": "hi"})
    assert idempotency_key(request, "k-1") == "header:k-1"  # type: ignore[arg-type]
    assert idempotency_key(request, None) is None  # type: ignore[arg-type]


def test_a_reply_is_keyed_by_its_previous_response_and_calls_in_any_order() -> None:
    one = _request({"previous_response_id": "resp_p", "input": [_reply("b"), _reply("a")]})
    two = _request({"previous_response_id": "resp_p", "input": [_reply("a", "x"), _reply("b")]})
    assert idempotency_key(one, None) == idempotency_key(two, None) == "reply:resp_p:a,b"  # type: ignore[arg-type]
    branch = _request({"previous_response_id": "resp_p", "input": [_reply("a")],
                       "metadata": {"checkflow.branch": "true"}})
    assert idempotency_key(branch, None) is None  # type: ignore[arg-type]
    assert idempotency_key(branch, "k") == "header:k"  # type: ignore[arg-type]


def test_a_keyed_new_conversation_is_derived_from_principal_and_key() -> None:
    assert keyed_conversation("alice", "k") == keyed_conversation("alice", "k")
    assert keyed_conversation("alice", "k") != keyed_conversation("bob", "k")
    assert keyed_conversation(None, "k") != keyed_conversation(None, "j")
    assert keyed_conversation(None, "k").startswith("conv_")


def test_the_origin_round_trips_through_the_turn_and_is_only_read_for_this_protocol() -> None:
    origin = ResponseOrigin(created_at=5, model="m", metadata={"k": "v"}, background=True,
                            input=[{"type": "message", "role": "user"}])
    recorded = turn_origin(origin)
    assert recorded.protocol == "responses"
    assert origin_of("responses", recorded.data) == origin
    assert origin_of("agui", recorded.data) is None
    assert origin_of("responses", {"model": "m"}) is None  # no created_at: not a response's
