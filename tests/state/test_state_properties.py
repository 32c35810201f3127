"""Property: any nested state built from the supported types round-trips exactly."""

from __future__ import annotations

import contextlib
import datetime
import enum
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkflow import state
from checkflow.errors import StateError, StateNestingError


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


def tagged_depth(value: Any) -> int:
    """The depth of ``value``'s tagged tree, by the reference (iterative) counter."""
    tree = state.to_builtins(value)
    depth = 0
    while state.nesting_depth_exceeds(tree, depth):
        depth += 1
    return depth


# The walks enforce the limit as they go; these pin them to the reference counter exactly,
# including the levels a tag adds (a tuple is a tag mapping and a list: two levels).
@given(states, st.sampled_from(["json", "msgpack"]))
def test_the_walks_apply_the_nesting_limit_exactly(value: Any, fmt: state.Format) -> None:
    depth = tagged_depth(value)
    data = state.encode(value, format=fmt, max_depth=max(depth, 1))
    state.decode(data, format=fmt, max_depth=max(depth, 1))
    if depth > 1:
        with pytest.raises(StateNestingError):
            state.encode(value, format=fmt, max_depth=depth - 1)
        with pytest.raises(StateNestingError):
            state.decode(data, format=fmt, max_depth=depth - 1)


specials = st.one_of(
    st.dictionaries(st.sampled_from(["$type", "$value", "x"]), st.integers(), min_size=1),
    st.tuples(st.integers(), st.text(max_size=3)),
    st.frozensets(st.integers(), max_size=3),
    st.sets(st.text(max_size=3), max_size=3),
    st.integers(min_value=2**64, max_value=2**80) | st.integers(max_value=-(2**63) - 1),
    st.binary(max_size=8),
    st.builds(Box, st.integers()),
    st.datetimes(timezones=offsets),
)


def buried(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``leaf`` deep inside plain lists and dicts that otherwise hold only plain scalars."""
    plain = st.integers(-5, 5) | st.text(max_size=3) | st.none()

    def wrap(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.tuples(st.lists(plain, max_size=3), inner).map(lambda p: [*p[0], p[1]]),
            st.tuples(st.dictionaries(st.text(max_size=3), plain, max_size=3),
                      st.text(max_size=3), inner).map(lambda p: {**p[0], p[1]: p[2]}),
        )

    return st.recursive(leaf, wrap, max_leaves=8)


@given(buried(specials), st.sampled_from(["json", "msgpack"]))
def test_values_needing_tags_deep_inside_plain_data_round_trip(
    assert_same: Callable[[Any, Any], None], value: Any, fmt: state.Format
) -> None:
    assert_same(value, state.decode(state.encode(value, format=fmt), format=fmt))
    assert state.from_builtins(state.to_builtins(value)) == value
