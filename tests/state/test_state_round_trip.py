"""Every supported type round-trips exactly, in JSON and MessagePack, nested arbitrarily."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import uuid
from collections.abc import Callable
from typing import Any

import msgspec
import pydantic
import pytest

from checkflow import state

FORMATS = ["json", "msgpack"]
IST = datetime.timezone(datetime.timedelta(hours=5, minutes=30))


@state.register_state_type
class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@state.register_state_type
class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


@state.register_state_type
class Note(msgspec.Struct, frozen=True):
    text: str
    span: Any = None
    tags: frozenset[str] = frozenset()


@state.register_state_type
@dataclasses.dataclass
class Draft:
    title: str
    notes: list[Note]
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    revision: int = dataclasses.field(default=0, init=False)


@state.register_state_type(type_id="tests.Money")
class Money:
    def __init__(self, amount: decimal.Decimal, currency: str) -> None:
        self.amount = amount
        self.currency = currency

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Money) and (self.amount, self.currency) == (
            other.amount,
            other.currency,
        )

    def to_dict(self) -> dict[str, Any]:
        return {"amount": self.amount, "currency": self.currency}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Money:
        return cls(data["amount"], data["currency"])


@state.register_state_type
class Reviewer(pydantic.BaseModel):
    name: str
    seen: tuple[int, ...]
    since: datetime.datetime


class Point:
    """A class with no default codec: registered with an explicit encoder/decoder pair."""

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self) -> int:
        return hash((self.x, self.y))


state.register_state_type(
    Point, type_id="tests.Point", encoder=lambda p: (p.x, p.y), decoder=lambda xy: Point(*xy)
)


def every_type() -> dict[str, Any]:
    draft = Draft("plan", [Note("a", span=(1, 2), tags=frozenset({"x"}))], meta={"k": (1,)})
    draft.revision = 7
    return {
        "workflow_state": {
            "str": "héllo",
            "int": 42,
            "big": 2**100,
            "negative_big": -(2**80),
            "uint64_max": 2**64 - 1,
            "int64_min": -(2**63),
            "float": 1.5,
            "negative_zero": -0.0,
            "bool": True,
            "none": None,
            "list": [1, "two", [3.0]],
            "tuple": (1, ("nested", 2)),
            "empty_tuple": (),
            "set": {1, 2, 3},
            "set_of_tuples": {(1, "a"), (2, "b")},
            "frozenset": frozenset({"a", "b"}),
            "bytes": b"\x00\xffbinary",
            "aware": datetime.datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=IST),
            "utc": datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC),
            "naive": datetime.datetime(2026, 3, 1, 12, 30),
            "date": datetime.date(2026, 3, 1),
            "time": datetime.time(23, 59, 1, 5),
            "timedelta": datetime.timedelta(days=-1, seconds=5, microseconds=7),
            "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
            "decimal": decimal.Decimal("1.10"),
        },
        "executor_states": {
            "reviewer": {
                "color": Color.BLUE,
                "priority": Priority.HIGH,
                "note": Note("hi", span=(3, (4, 5)), tags=frozenset({"t"})),
                "draft": draft,
                "money": Money(decimal.Decimal("9.99"), "EUR"),
                "model": Reviewer(
                    name="r", seen=(1, 2), since=datetime.datetime(2026, 1, 1, tzinfo=IST)
                ),
                "points": [Point(1, 2), {Point(3, 4)}],
            }
        },
        "edge_states": {},
        "messages": {"input": [], "pending": [(Color.RED, b"x")], "output": []},
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_supported_type_round_trips_equal_and_same_type(
    fmt: state.Format, assert_same: Callable[[Any, Any], None]
) -> None:
    value = every_type()
    assert_same(value, state.decode(state.encode(value, format=fmt), format=fmt))


def test_from_builtins_inverts_to_builtins(assert_same: Callable[[Any, Any], None]) -> None:
    value = every_type()
    assert_same(value, state.from_builtins(state.to_builtins(value)))


def test_from_builtins_leaves_its_argument_untouched() -> None:
    tree = state.to_builtins({"t": (1, 2)})
    snapshot = msgspec.json.encode(tree)
    state.from_builtins(tree)
    assert msgspec.json.encode(tree) == snapshot


def test_encode_is_msgspec_json_of_to_builtins() -> None:
    value = every_type()
    assert state.encode(value) == msgspec.json.encode(state.to_builtins(value))


def test_to_builtins_output_is_msgspec_native_and_tagged() -> None:
    assert state.to_builtins({"t": (1, 2), "c": Color.RED}) == {
        "t": {"$type": "builtins.tuple", "$value": [1, 2]},
        "c": {"$type": f"{__name__}.Color", "$value": "red"},
    }


def test_to_builtins_does_not_mutate_the_value() -> None:
    value = {"a": [(1, 2)], "$type": "user"}
    state.to_builtins(value)
    assert value == {"a": [(1, 2)], "$type": "user"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_aware_datetime_keeps_its_exact_offset(fmt: state.Format) -> None:
    odd = datetime.timezone(datetime.timedelta(hours=-3, minutes=-15, seconds=-7))
    value = datetime.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=odd)
    decoded = state.decode(state.encode(value, format=fmt), format=fmt)
    assert decoded == value and decoded.utcoffset() == value.utcoffset()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "value",
    [
        datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(microseconds=1))),
        datetime.time(1, 2, tzinfo=datetime.timezone(datetime.timedelta(microseconds=-7))),
        datetime.time(1, 2, tzinfo=datetime.timezone(datetime.timedelta(seconds=37))),
    ],
)
def test_offset_with_seconds_or_microseconds_survives_exactly(
    fmt: state.Format, value: datetime.datetime | datetime.time
) -> None:
    decoded = state.decode(state.encode(value, format=fmt), format=fmt)
    assert decoded == value and decoded.utcoffset() == value.utcoffset()


@pytest.mark.parametrize("fmt", FORMATS)
def test_naive_datetime_stays_naive(fmt: state.Format) -> None:
    value = datetime.datetime(2026, 1, 2, 3, 4, 5)
    assert state.decode(state.encode(value, format=fmt), format=fmt).tzinfo is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_tuple_inside_a_struct_field_stays_a_tuple(fmt: state.Format) -> None:
    decoded = state.decode(state.encode(Note("x", span=(1, [2, (3,)])), format=fmt), format=fmt)
    assert type(decoded.span) is tuple and type(decoded.span[1][1]) is tuple


@pytest.mark.parametrize("fmt", FORMATS)
def test_dataclass_field_outside_init_survives(fmt: state.Format) -> None:
    draft = Draft("t", [])
    draft.revision = 3
    assert state.decode(state.encode(draft, format=fmt), format=fmt).revision == 3


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "user_dict",
    [
        {"$type": "builtins.tuple", "$value": [1, 2]},
        {"$type": "tests.Money", "$value": {"amount": "1", "currency": "X"}},
        {"$type": "not.registered"},
        {"$type": {"$type": "nested"}, "other": [{"$value": 1, "$type": None}]},
        {"$value": "only the value key"},
    ],
)
def test_user_dict_holding_the_tag_key_round_trips_unchanged(
    fmt: state.Format, user_dict: dict[str, Any]
) -> None:
    assert state.decode(state.encode(user_dict, format=fmt), format=fmt) == user_dict


def test_escaped_dict_is_never_read_as_a_tag() -> None:
    looks_like_a_tag = {"$type": "builtins.tuple", "$value": [1, 2]}
    assert state.to_builtins(looks_like_a_tag) == {
        "$type": "builtins.dict",
        "$value": looks_like_a_tag,
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_pydantic_model_round_trips_through_dump_and_validate(fmt: state.Format) -> None:
    model = Reviewer(name="n", seen=(3,), since=datetime.datetime(2026, 2, 2, tzinfo=IST))
    decoded = state.decode(state.encode(model, format=fmt), format=fmt)
    assert decoded == model and type(decoded.seen) is tuple


@pytest.mark.parametrize("fmt", FORMATS)
def test_custom_encoder_and_decoder_pair_is_used(fmt: state.Format) -> None:
    encoded = state.to_builtins(Point(1, 2))
    assert encoded == {
        "$type": "tests.Point",
        "$value": {"$type": "builtins.tuple", "$value": [1, 2]},
    }
    assert state.decode(state.encode({Point(1, 2)}, format=fmt), format=fmt) == {Point(1, 2)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_plain_data_decodes_without_tags(fmt: state.Format) -> None:
    value = {"a": [1, "b", None, 2.5, {"c": True}]}
    assert state.decode(state.encode(value, format=fmt), format=fmt) == value


def test_equal_sets_encode_to_equal_bytes_whatever_the_insertion_order() -> None:
    assert state.encode({"b", "a", "c"}) == state.encode({"c", "a", "b"})


def test_msgpack_carries_bytes_natively() -> None:
    payload = b"\x00" * 64
    assert payload in state.encode(payload, format="msgpack")


def test_json_tag_key_written_with_unicode_escapes_is_still_a_tag() -> None:
    data = b'{"t": {"\\u0024type": "builtins.tuple", "$value": [1, "caf\\u00e9"]}}'
    assert state.decode(data) == {"t": (1, "café")}


@pytest.mark.parametrize("wrap", [bytearray, memoryview])
def test_decode_accepts_any_bytes_like_buffer(wrap: Callable[[bytes], Any]) -> None:
    assert state.decode(wrap(state.encode({"t": (1,)}))) == {"t": (1,)}
