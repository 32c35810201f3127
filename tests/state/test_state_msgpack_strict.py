"""MessagePack decoding refuses what encoding could never have written."""

from __future__ import annotations

import datetime

import msgspec
import pytest

from checkflow import state
from checkflow.errors import StateEncodingError, StateNestingError

enc = msgspec.msgpack.encode


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({1: "x"}, "a map key of type int"),
        ({"a": {b"k": 1}}, "a map key of type bytes"),
        ({"a": {None: 1}}, "a map key of type NoneType"),
        ([msgspec.msgpack.Ext(1, b"x")], "msgspec.msgpack.Ext"),
        ({"when": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)}, "datetime.datetime"),
        ([float("nan")], "non-finite float nan"),
        ({"x": [1, float("inf")]}, "non-finite float inf"),
        (float("-inf"), "non-finite float -inf"),
    ],
)
def test_msgpack_decode_refuses_what_encode_refuses(payload: object, problem: str) -> None:
    with pytest.raises(StateEncodingError, match=problem) as caught:
        state.decode(enc(payload), format="msgpack", path="executor_states.x")
    assert caught.value.path == "executor_states.x"
    assert not isinstance(caught.value, StateNestingError)


def test_the_offence_is_located_in_the_message() -> None:
    with pytest.raises(StateEncodingError, match=r"at \['a'\]\[1\]\[2\]"):
        state.decode(enc({"a": [0, {2: "x"}]}), format="msgpack")


def test_msgpack_inspection_refuses_them_too() -> None:
    with pytest.raises(StateEncodingError, match="map key"):
        state.decode_for_inspection(enc({1: 2}), format="msgpack")


def test_what_encode_writes_still_decodes() -> None:
    value = {"b": b"\x00raw", "t": (1, 2.5), "s": {"x"}, "n": None, "big": 2**70, "f": -0.0}
    assert state.decode(state.encode(value, format="msgpack"), format="msgpack") == value


def test_json_refuses_numbers_out_of_range() -> None:
    with pytest.raises(StateEncodingError):
        state.decode(b"[1e400]")
