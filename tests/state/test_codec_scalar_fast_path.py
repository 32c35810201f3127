"""A lone scalar (or an empty dict or list) is encoded without the walk, to exactly the bytes
the walk writes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkflow import state
from checkflow.state import _encode

_scalars = st.one_of(st.none(), st.booleans(), st.text(), st.just("$type"), st.just({}),
                     st.just([]),
                     st.integers(min_value=_encode._INT_MIN, max_value=_encode._INT_MAX))
_WRITE = {"json": msgspec.json.encode, "msgpack": msgspec.msgpack.encode}


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
@given(value=_scalars)
def test_a_scalar_encodes_as_the_tagged_walk_writes_it_and_round_trips(
    fmt: Any, value: Any
) -> None:
    walked = _WRITE[fmt](state.to_builtins(value))  # the tagged layout, by its definition
    for layout in ("auto", "tagged"):
        data = state.encode(value, format=fmt, layout=layout)  # type: ignore[arg-type]
        assert data == walked, (layout, data, walked)
        assert state.decode(data, format=fmt) == value
        assert type(state.decode(data, format=fmt)) is type(value)


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
@pytest.mark.parametrize("value", [_encode._INT_MAX + 1, _encode._INT_MIN - 1, 1 << 200])
def test_ints_past_64_bits_still_take_the_walk(fmt: Any, value: int) -> None:
    assert b"builtins.int" in state.encode(value, format=fmt, layout="tagged")
    assert state.decode(state.encode(value, format=fmt), format=fmt) == value
