"""The nesting limit: deep values are a typed error everywhere, never a RecursionError."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from checkflow import state
from checkflow.errors import StateEncodingError, StateNestingError

DEPTHS = [201, 490, 750, 999, 1000, 5000, 100_000]
FORMATS = ["json", "msgpack"]


def nested_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def nested_bytes(depth: int, fmt: str) -> bytes:
    if fmt == "json":
        return b"[" * depth + b"]" * depth
    return b"\x91" * (depth - 1) + b"\x90"  # fixarray of one, ..., empty fixarray


@pytest.fixture
def limit_of(request: pytest.FixtureRequest) -> Iterator[None]:
    previous = state.set_max_nesting_depth(request.param)
    yield
    state.set_max_nesting_depth(previous)


def test_the_default_limit_is_200_levels() -> None:
    assert state.DEFAULT_MAX_NESTING_DEPTH == 200
    assert state.max_nesting_depth() == 200


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_value_exactly_at_the_limit_round_trips(fmt: str) -> None:
    value = nested_list(200)
    assert state.decode(state.encode(value, format=fmt), format=fmt) == value  # type: ignore[arg-type]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_encoding_a_value_past_the_limit_is_a_nesting_error(fmt: str, depth: int) -> None:
    with pytest.raises(StateNestingError, match="nested deeper than 200 levels") as caught:
        state.encode({"deep": nested_list(depth)}, format=fmt, path="executor_states.x")  # type: ignore[arg-type]
    assert caught.value.limit == 200
    assert caught.value.path == "executor_states.x"
    assert isinstance(caught.value, StateEncodingError)


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_decoding_bytes_past_the_limit_is_a_nesting_error(fmt: str, depth: int) -> None:
    with pytest.raises(StateNestingError) as caught:
        state.decode(nested_bytes(depth, fmt), format=fmt, path="messages.input")  # type: ignore[arg-type]
    assert caught.value.path == "messages.input"


@pytest.mark.parametrize("fmt", FORMATS)
def test_inspection_decoding_applies_the_limit_too(fmt: str) -> None:
    with pytest.raises(StateNestingError):
        state.decode_for_inspection(nested_bytes(1000, fmt), format=fmt)  # type: ignore[arg-type]


def test_deep_tagged_values_count_their_tags() -> None:
    value: Any = ()
    for _ in range(120):  # each tuple is a tag mapping plus its list: two levels
        value = (value,)
    with pytest.raises(StateNestingError):
        state.encode(value)


@pytest.mark.parametrize("limit_of", [5], indirect=True)
@pytest.mark.usefixtures("limit_of")
def test_the_process_wide_limit_is_configurable() -> None:
    assert state.max_nesting_depth() == 5
    state.encode(nested_list(5))
    with pytest.raises(StateNestingError, match="deeper than 5 levels"):
        state.encode(nested_list(6))
    with pytest.raises(StateNestingError):
        state.decode(b"[[[[[[]]]]]]")


def test_a_per_call_limit_overrides_the_process_wide_one() -> None:
    data = state.encode(nested_list(50))
    with pytest.raises(StateNestingError, match="deeper than 10 levels"):
        state.decode(data, max_depth=10)
    with pytest.raises(StateNestingError):
        state.encode(nested_list(50), max_depth=10)
    assert state.decode(state.encode(nested_list(300), max_depth=400), max_depth=400)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "9"])
def test_the_limit_must_be_a_positive_int(bad: Any) -> None:
    with pytest.raises(ValueError, match="positive int"):
        state.set_max_nesting_depth(bad)


def test_a_self_containing_dict_is_a_nesting_error() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(StateNestingError, match="containing itself"):
        state.encode(loop)


def test_wide_values_are_not_mistaken_for_deep_ones() -> None:
    wide = [[{"a": [1, 2]}] for _ in range(5000)]  # 15,000 containers, three levels deep
    for fmt in FORMATS:
        assert state.decode(state.encode(wide, format=fmt), format=fmt) == wide  # type: ignore[arg-type]


# -- nesting_depth_exceeds: the helper the HTTP layer checks parsed bodies with ----------


@pytest.mark.parametrize(
    ("value", "depth"),
    [(1, 0), ("x", 0), ([], 1), ({}, 1), ([1, 2], 1), ({"a": [1]}, 2), ([[], [[]]], 3),
     ({"a": {"b": {"c": 1}}}, 3), ((1, (2,)), 2), ({frozenset({1})}, 2)],
)
def test_nesting_depth_exceeds_counts_containers(value: Any, depth: int) -> None:
    assert not state.nesting_depth_exceeds(value, depth)
    if depth:
        assert state.nesting_depth_exceeds(value, depth - 1)


def test_nesting_depth_exceeds_handles_a_million_levels_without_recursion() -> None:
    deep = nested_list(1_000_000)
    assert state.nesting_depth_exceeds(deep, 64)
    assert not state.nesting_depth_exceeds(deep, 1_000_000)


def test_nesting_depth_exceeds_follows_every_branch() -> None:
    value = {"shallow": [1], "other": [[[], []], [[[]]]]}  # the last branch is 5 deep
    assert state.nesting_depth_exceeds(value, 4)
    assert not state.nesting_depth_exceeds(value, 5)


def test_nesting_depth_exceeds_on_a_parsed_json_body() -> None:
    body = msgspec.json.decode(b'{"message": ' + b"[" * 65 + b"]" * 65 + b"}")
    assert state.nesting_depth_exceeds(body, 64)
    assert not state.nesting_depth_exceeds(body, 66)


@pytest.mark.parametrize("bad", [-1, 1.5, None])
def test_nesting_depth_exceeds_refuses_a_bad_limit(bad: Any) -> None:
    with pytest.raises(ValueError, match="limit"):
        state.nesting_depth_exceeds([], bad)
