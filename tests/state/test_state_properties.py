"""Property: any nested state built from the supported types round-trips exactly."""

from __future__ import annotations

import contextlib
import datetime
import enum
from collections.abc import Callable
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from checkflow import state
from checkflow.errors import StateError


@state.register_state_type
class Mood(enum.Enum):
    CALM = "calm"
    ODD = 3


@state.register_state_type
class Box(msgspec.Struct):
    content: Any
    label: str = ""


offsets = st.builds(
    datetime.timezone,
    st.timedeltas(
        min_value=datetime.timedelta(hours=-23, minutes=-59),
        max_value=datetime.timedelta(hours=23, minutes=59),
    ),
)
hashable_leaves = st.one_of(
    st.text(max_size=8),
    st.integers(),  # unbounded: beyond 64 bits too
    st.booleans(),
    st.none(),
    st.binary(max_size=8),
    st.dates(),
    st.uuids(),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.sampled_from(Mood),
)
leaves = st.one_of(
    hashable_leaves,
    st.floats(allow_nan=False, allow_infinity=False),
    st.datetimes(),
    st.datetimes(timezones=offsets),
    st.times(),
    st.times(timezones=offsets),
    st.timedeltas(),
)
hashables = st.recursive(
    hashable_leaves,
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=6,
)
keys = st.text(max_size=6) | st.sampled_from(["$type", "$value"])
states = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(keys, inner, max_size=4),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
        st.builds(Box, inner, st.text(max_size=4)),
    ),
    max_leaves=25,
)


@given(states)
def test_any_nested_state_round_trips_in_json(
    assert_same: Callable[[Any, Any], None], value: Any
) -> None:
    assert_same(value, state.decode(state.encode(value)))


@given(states)
def test_any_nested_state_round_trips_in_msgpack(
    assert_same: Callable[[Any, Any], None], value: Any
) -> None:
    assert_same(value, state.decode(state.encode(value, format="msgpack"), format="msgpack"))


@given(states)
def test_to_builtins_output_is_plain_msgspec_data(value: Any) -> None:
    tree = state.to_builtins(value)
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(tree)) == tree


@given(st.binary(max_size=64), st.sampled_from(["json", "msgpack"]))
def test_arbitrary_bytes_decode_or_fail_as_a_state_error(data: bytes, fmt: state.Format) -> None:
    with contextlib.suppress(StateError):
        state.decode(data, format=fmt)


@given(states, st.data())
def test_corrupted_encoding_decodes_or_fails_as_a_state_error(
    value: Any, data: st.DataObject
) -> None:
    encoded = bytearray(state.encode(value, format="msgpack"))
    index = data.draw(st.integers(0, len(encoded) - 1))
    encoded[index] ^= data.draw(st.integers(1, 255))
    with contextlib.suppress(StateError):
        state.decode(bytes(encoded), format="msgpack")
