"""JSON messages become the start executor's declared types, most specific first."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import pytest

from checkflow.errors import InvalidMessageError
from checkflow.hosting._convert import MessageConverter
from checkflow.hosting._views import jsonable
from checkflow.state import OpaqueValue


@dataclass
class Point:
    x: int
    y: int


class Labeled(msgspec.Struct):
    x: int
    y: int
    label: str


class Color(enum.Enum):
    RED = "red"


def test_a_record_is_tried_before_a_plain_dict() -> None:
    converter = MessageConverter([dict[str, Any], Point])
    assert converter.convert({"x": 1, "y": 2}) == Point(1, 2)


def test_the_record_with_more_fields_is_tried_first() -> None:
    converter = MessageConverter([Point | Labeled])
    assert converter.convert({"x": 1, "y": 2, "label": "a"}) == Labeled(1, 2, "a")
    assert converter.convert({"x": 1, "y": 2}) == Point(1, 2)


def test_conversion_is_strict_about_scalars() -> None:
    converter = MessageConverter([int])
    with pytest.raises(InvalidMessageError):
        converter.convert("12")


def test_bool_is_not_taken_for_int_and_int_fits_float() -> None:
    converter = MessageConverter([float, bool])
    assert converter.convert(True) is True
    assert converter.convert(3) == 3.0


def test_enums_and_literals_convert_from_their_values() -> None:
    assert MessageConverter([Color]).convert("red") is Color.RED
    assert MessageConverter([Literal["a", "b"]]).convert("b") == "b"


def test_any_accepts_what_nothing_more_specific_did() -> None:
    converter = MessageConverter([Any, Point])
    assert converter.convert({"x": 1, "y": 2}) == Point(1, 2)
    assert converter.convert([1, 2]) == [1, 2]


def test_no_fit_lists_the_accepted_types_most_specific_first() -> None:
    converter = MessageConverter([str, Point, list[int]])
    with pytest.raises(InvalidMessageError) as caught:
        converter.convert({"nope": True})
    assert caught.value.accepted_types == [
        "test_message_conversion.Point", "list[int]", "str"]
    assert "Point" in str(caught.value)


def test_an_opaque_value_is_shown_with_its_type_id() -> None:
    shown = jsonable({"notes": [OpaqueValue("elsewhere.Note", {"text": "hi"})]})
    assert shown == {"notes": [{"$opaque": "elsewhere.Note", "value": {"text": "hi"}}]}


def test_values_nobody_can_encode_are_shown_not_failed() -> None:
    class Odd:
        def __repr__(self) -> str:
            return "<odd>"

    assert jsonable([Odd(), Point(1, 2)]) == ["<odd>", {"x": 1, "y": 2}]
