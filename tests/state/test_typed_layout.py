"""The typed layout: regular state (records of one shape) is written as msgspec writes it plus
a schema, and reads back exactly; anything it cannot express keeps the tagged layout."""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkflow import state
from checkflow.errors import StateEncodingError, StateNestingError, UnregisteredStateTypeError
from checkflow.state._typed import is_typed

FORMATS = ["json", "msgpack"]
UTC = datetime.UTC


def exact(expected: Any, actual: Any, where: str = "<root>") -> None:
    """Equal, of the same types, in the same key order, and with the same UTC offsets."""
    assert type(actual) is type(expected), f"{where}: {type(actual)} != {type(expected)}"
    assert actual == expected or expected != expected, f"{where}: {actual!r} != {expected!r}"
    if type(expected) is dict:
        assert list(actual) == list(expected), f"{where}: key order differs"
        for key, value in expected.items():
            exact(value, actual[key], f"{where}.{key}")
    elif type(expected) in (list, tuple):
        for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
            exact(left, right, f"{where}[{index}]")
    elif type(expected) in (datetime.datetime, datetime.time):
        assert actual.utcoffset() == expected.utcoffset(), f"{where}: offset differs"
        assert (actual.tzinfo is None) == (expected.tzinfo is None), f"{where}: naive/aware"


def round_trip(value: Any, fmt: str) -> bytes:
    data = state.encode(value, format=fmt)  # type: ignore[arg-type]
    exact(value, state.decode(data, format=fmt))  # type: ignore[arg-type]
    return data


# One record shape per example: every record has these keys (some may be left out), each key
# holding one kind of value, sometimes None where the shape allows it.
whole_minutes = st.builds(
    lambda minutes: datetime.timezone(datetime.timedelta(minutes=minutes)),
    st.integers(-23 * 60 - 59, 23 * 60 + 59),
)
kinds: dict[str, st.SearchStrategy[Any]] = {
    "text": st.text(max_size=6),
    "int": st.integers(-(2**63), 2**63),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "bool": st.booleans(),
    "naive": st.datetimes(),
    "utc": st.datetimes(timezones=st.just(UTC)),
    "date": st.dates(),
    "time": st.times(),
    "delta": st.timedeltas(),
    "uuid": st.uuids(),
    "decimal": st.decimals(allow_nan=False, allow_infinity=False),
    "bytes": st.binary(max_size=6),
    "pair": st.tuples(st.integers(0, 9), st.text(max_size=3)),
    "ints": st.lists(st.integers(0, 9), max_size=3).map(tuple),
    "tags": st.lists(st.text(max_size=3), max_size=3),
    "nested": st.dictionaries(st.sampled_from(["a", "b"]), st.integers(), max_size=2),
}
names = st.text(st.characters(codec="ascii"), max_size=5) | st.sampled_from(
    ["$type", "$value", "é", "日本", "Ā"])


@st.composite
def records(draw: st.DrawFn) -> list[dict[str, Any]]:
    shape = draw(st.dictionaries(names, st.sampled_from(sorted(kinds)), max_size=5))
    optional = draw(st.sets(st.sampled_from(sorted(shape) or [""])))
    nullable = draw(st.sets(st.sampled_from(sorted(shape) or [""])))
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        row = {}
        for key, kind in shape.items():
            if key in optional and draw(st.booleans()):
                continue
            if key in nullable and draw(st.booleans()):
                row[key] = None
            else:
                row[key] = draw(kinds[kind])
        rows.append(row)
    return rows


@pytest.mark.parametrize("fmt", FORMATS)
@given(rows=records())
def test_lists_of_records_round_trip_exactly(fmt: str, rows: list[dict[str, Any]]) -> None:
    round_trip(rows, fmt)
    round_trip({"executor_states": {"notes": rows, "more": [rows, rows]}}, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@given(rows=records(), offset=whole_minutes)
def test_offsets_round_trip_exactly(fmt: str, rows: list[dict[str, Any]],
                                    offset: datetime.tzinfo) -> None:
    stamped = [{**row, "at": datetime.datetime(2026, 1, 1, tzinfo=offset)} for row in rows]
    round_trip(stamped, fmt)


def regular_state() -> dict[str, Any]:
    base = datetime.datetime(2026, 1, 1, tzinfo=UTC)
    return {"notes": [{"id": i, "at": base + datetime.timedelta(seconds=i), "span": (i, i + 1),
                       "who": uuid.UUID(int=i), "cost": decimal.Decimal(i) / 4}
                      for i in range(50)]}


@pytest.mark.parametrize("fmt", FORMATS)
def test_regular_state_takes_the_typed_layout(fmt: str) -> None:
    data = round_trip(regular_state(), fmt)
    assert is_typed(data, fmt)
    assert b"datetime.datetime" not in data  # no inline tags
    assert len(data) < len(state.encode(regular_state(), format=fmt, layout="tagged"))  # type: ignore[arg-type]


def test_equal_values_give_equal_bytes_whatever_the_key_order() -> None:
    one = [{"b": (1,), "a": 2}, {"a": 3, "b": (4,)}]
    other = [{"b": (1,), "a": 2}, {"a": 3, "b": (4,)}]
    assert state.encode(one) == state.encode(other)


def test_plain_json_is_written_bare_and_a_tag_key_is_never_misread() -> None:
    assert state.encode({"a": [1, 2.5, None]}) == b'{"a":[1,2.5,null]}'
    tricky = {"$type": "builtins.tuple", "$value": [1, 2]}
    assert not is_typed(round_trip(tricky, "json"), "json")  # small: escaped by the tagged
    assert is_typed(round_trip([tricky] * 100, "json"), "json")  # large: no escape needed


@pytest.mark.parametrize("value", [
    [{"a": {1, 2}}],  # a set: sorted by the tagged layout so that equal sets give equal bytes
    [{"a": float("nan")}],
    [{"a": 1}, {"a": "x"}, {"a": (1,)}],  # a mix of kinds no schema node tells apart
    [datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(seconds=30)))],
    [{"é": 1, "x": (1,)}, {"é": "a", "x": (2,)}],  # non-ASCII field names of unlike values
])
@pytest.mark.parametrize("fmt", FORMATS)
def test_what_the_schema_cannot_express_keeps_the_tagged_layout(value: Any, fmt: str) -> None:
    try:
        data = state.encode(value, format=fmt)  # type: ignore[arg-type]
    except StateEncodingError:
        assert value != value or "nan" in repr(value)
        return
    assert not is_typed(data, fmt)
    decoded = state.decode(data, format=fmt)  # type: ignore[arg-type]
    assert repr(decoded) == repr(value)


def test_errors_still_name_the_path() -> None:
    with pytest.raises(UnregisteredStateTypeError, match=r"notes\[1\]\.x"):
        state.encode({"notes": [{"x": 1}, {"x": object()}]})
    with pytest.raises(StateEncodingError, match=r"notes\[0\]\.x"):
        state.encode({"notes": [{"x": float("inf")}, {"x": 1.0}]})
    with pytest.raises(StateEncodingError, match="not a str"):
        state.encode({"notes": [{1: 2}]})


def envelope(schema: Any, value: Any, fmt: str = "json", *, length: int | None = None) -> bytes:
    """Typed-layout bytes as the encoder writes them: the schema's length, schema, value."""
    encoder = msgspec.json if fmt == "json" else msgspec.msgpack
    raw = encoder.encode(schema)
    size = len(raw) if length is None else length
    return encoder.encode({"$type": "checkflow.typed", "$value": [size, msgspec.Raw(raw), value]})


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("schema, value, complaint", [
    (["l", "dt"], ["not a date"], r"\$\[0\]"),
    (["D", {"a": "s"}], {"a": [1]}, r"\$\.a"),
    (["X", "s"], 1, "schema"),
    (["l"], [1], "schema"),
    (["D", [1, 2]], {}, "schema"),
    ("nope", 1, "schema"),
    (["|", ["s", "dt"]], 1, "schema"),  # a union msgspec cannot tell apart
])
def test_bytes_the_encoder_never_writes_are_refused_by_name(
    fmt: str, schema: Any, value: Any, complaint: str
) -> None:
    with pytest.raises(StateEncodingError, match=complaint):
        state.decode(envelope(schema, value, fmt), format=fmt)  # type: ignore[arg-type]


def test_a_typed_envelope_of_the_wrong_shape_is_refused() -> None:
    for data in (
        b'{"$type":"checkflow.typed","$value":[["l","s"]]}',
        b'{"$type":"checkflow.typed","$value":[8,["l","s"],[1]],"x":1}',
        b'{"$type":"checkflow.typed","$value":[8,["l","s"]]}',
        b'{"$type":"checkflow.typed","$value":[',
        b'{"$type":"checkflow.typed","$value":[99999,["l","s"],[1]]}',
    ):
        with pytest.raises(StateEncodingError):
            state.decode(data)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_schema_length_that_lies_is_refused(fmt: str) -> None:
    for length in (0, 3, 7, 10_000):
        with pytest.raises(StateEncodingError):
            state.decode(envelope(["l", "dt"], ["2026-01-01T00:00:00Z"], fmt, length=length),
                         format=fmt)  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_nesting_limit_is_the_same_in_both_layouts(fmt: str) -> None:
    value: Any = (1,)
    for _ in range(20):
        value = [value]
    # 20 lists and a tuple (two levels in the tagged layout) nest 22 levels
    assert state.decode(state.encode(value, format=fmt, max_depth=22), format=fmt,  # type: ignore[arg-type]
                        max_depth=22) == value
    for layout in ("auto", "tagged"):
        with pytest.raises(StateNestingError):
            state.encode(value, format=fmt, max_depth=21, layout=layout)  # type: ignore[arg-type]
    deep = envelope(_nested_schema(40), _nested_value(40), fmt)
    with pytest.raises(StateNestingError):
        state.decode(deep, format=fmt, max_depth=30)  # type: ignore[arg-type]
    assert state.decode(deep, format=fmt, max_depth=40) == _nested_value(40)  # type: ignore[arg-type]


def _nested_schema(levels: int) -> Any:
    node: Any = "s"
    for _ in range(levels):
        node = ["l", node]
    return node


def _nested_value(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def test_a_hostile_deep_schema_is_refused_without_recursing() -> None:
    deep = b'{"$type":"checkflow.typed","$value":[' + b'["l",' * 5000 + b'"s"' + b"]" * 5000
    deep += b",1]}"
    with pytest.raises((StateNestingError, StateEncodingError)):
        state.decode(deep)


@pytest.mark.parametrize("fmt", FORMATS)
def test_inspection_reads_the_typed_layout(fmt: str) -> None:
    data = state.encode(regular_state(), format=fmt)  # type: ignore[arg-type]
    assert is_typed(data, fmt)
    exact(regular_state(), state.decode_for_inspection(data, format=fmt))  # type: ignore[arg-type]


def test_unknown_layout_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="layout"):
        state.encode(1, layout="columns")  # type: ignore[arg-type]
