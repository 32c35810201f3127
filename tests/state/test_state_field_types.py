"""Registered dataclasses and msgspec Structs are decoded with their field types checked."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from typing import Any, Literal

import msgspec
import pytest

from checkflow import state
from checkflow.errors import StateEncodingError


@state.register_state_type(type_id="tests.fields.Point")
@dataclasses.dataclass
class Point:
    x: int
    y: int


class Colour(enum.Enum):
    RED = "red"


state.register_state_type(Colour, type_id="tests.fields.Colour")


@state.register_state_type(type_id="tests.fields.Shape")
class Shape(msgspec.Struct):
    points: list[Point]
    colour: Colour
    label: str | None = None
    kind: Literal["open", "closed"] = "open"
    corners: tuple[int, int] = (0, 0)
    tags: dict[str, float] = {}
    ident: uuid.UUID | None = None
    made: datetime.date | None = None
    anything: Any = None


@state.register_state_type(type_id="tests.fields.Late")
@dataclasses.dataclass
class Late:
    a: int
    b: str = dataclasses.field(init=False, default="")


def tampered(value: Any, old: bytes, new: bytes) -> bytes:
    data = state.encode(value)
    assert old in data
    return data.replace(old, new, 1)


def test_a_point_with_wrong_field_types_is_refused() -> None:
    data = tampered(Point(1, 2), b'"x":1,"y":2', b'"x":"a","y":[1]')
    with pytest.raises(StateEncodingError, match="field 'x' of Point: expected int, got str"):
        state.decode(data)


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (b'"label":null', b'"label":7', "field 'label' of Shape: expected str | none"),
        (b'"kind":"open"', b'"kind":"ajar"', "'ajar' is not one of"),
        (b'"tags":{"w":1.5}', b'"tags":{"w":"heavy"}', r"field 'tags' of Shape: \['w'\]"),
        (b'"anything":null', b'"anything":{"$type":"tests.fields.Point","$value":{"x":1,'
         b'"y":"two"}}', "field 'y' of Point"),
    ],
)
def test_a_struct_field_of_the_wrong_type_is_refused(old: bytes, new: bytes, problem: str) -> None:
    shape = Shape([Point(1, 2)], Colour.RED, tags={"w": 1.5})
    with pytest.raises(StateEncodingError, match=problem):
        state.decode(tampered(shape, old, new))


def test_a_nested_registered_value_of_the_wrong_class_is_refused() -> None:
    shape = Shape([Point(1, 2)], Colour.RED)
    data = tampered(shape, b'"$type":"tests.fields.Point"', b'"$type":"tests.fields.Colour"')
    data = data.replace(b'"$value":{"x":1,"y":2}', b'"$value":"red"')
    with pytest.raises(StateEncodingError, match=r"field 'points' of Shape: \[0\]: expected Point"):
        state.decode(data)


def test_a_tuple_field_given_the_wrong_length_is_refused() -> None:
    shape = Shape([], Colour.RED, corners=(1, 2))
    data = tampered(shape, b'"$value":[1,2]', b'"$value":[1,2,3]')
    with pytest.raises(StateEncodingError, match="expected tuple of 2"):
        state.decode(data)


def test_fields_of_the_right_types_round_trip_exactly(assert_same: Any) -> None:
    shape = Shape(
        [Point(1, 2), Point(3, 4)], Colour.RED, label="tri", kind="closed", corners=(3, 4),
        tags={"w": 2}, ident=uuid.uuid4(), made=datetime.date(2024, 5, 6), anything={"x": (1,)},
    )
    assert_same(shape, state.decode(state.encode(shape)))
    assert_same(shape, state.decode(state.encode(shape, format="msgpack"), format="msgpack"))


def test_init_false_dataclass_fields_still_round_trip() -> None:
    late = Late(3)
    late.b = "set later"
    assert state.decode(state.encode(late)) == late
    with pytest.raises(StateEncodingError, match="field 'b' of Late"):
        state.decode(tampered(late, b'"b":"set later"', b'"b":5'))


def test_a_payload_that_is_not_a_mapping_is_refused() -> None:
    data = tampered(Point(1, 2), b'{"x":1,"y":2}', b"[1,2]")
    with pytest.raises(StateEncodingError, match="expected the fields of"):
        state.decode(data)


def test_unknown_and_missing_fields_are_refused() -> None:
    with pytest.raises(StateEncodingError, match="Point"):
        state.decode(tampered(Point(1, 2), b'"y":2', b'"y":2,"z":3'))
    with pytest.raises(StateEncodingError, match="Point"):
        state.decode(tampered(Point(1, 2), b',"y":2', b""))
