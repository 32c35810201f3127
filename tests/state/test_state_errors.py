"""Every way encoding or decoding fails names the path and fails as a StateError."""

from __future__ import annotations

import re
import sys
from typing import Any

import msgspec
import pytest

from checkflow import state
from checkflow.errors import StateEncodingError, StateError, UnregisteredStateTypeError

FORMATS = ["json", "msgpack"]


class Unregistered:
    pass


@state.register_state_type
class Wrapper(msgspec.Struct):
    items: Any


class Fussy:
    def __init__(self, value: int) -> None:
        self.value = value


def _refuse(_: Any) -> Any:
    raise RuntimeError("cannot encode a Fussy with value 13")


state.register_state_type(
    Fussy, type_id="tests.errors.Fussy", encoder=_refuse, decoder=lambda raw: Fussy(raw)
)


def test_unregistered_value_names_its_path_and_type() -> None:
    value = {"notes": ["a", "b", "c", Unregistered()]}
    with pytest.raises(UnregisteredStateTypeError) as caught:
        state.encode(value, path="executor_states.reviewer")
    error = caught.value
    assert error.path == "executor_states.reviewer.notes[3]"
    assert error.type_name == f"{__name__}.Unregistered"
    assert "executor_states.reviewer.notes[3]" in str(error)
    assert f"{__name__}.Unregistered" in str(error)


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (Unregistered(), ""),
        ({"a": {"b": [0, (1, Unregistered())]}}, "a.b[1][1]"),
        ({"t": ("a", None, True, 2**70, Unregistered())}, "t[4]"),
        ({"odd key": Unregistered()}, "['odd key']"),
        ({"w": Wrapper(items={"deep": [Unregistered()]})}, "w.items.deep[0]"),
        ({"s": frozenset({Unregistered()})}, "s[0]"),
        ({"$type": "x", "v": Unregistered()}, "v"),
    ],
)
def test_unregistered_path_points_inside_every_container_kind(value: Any, path: str) -> None:
    with pytest.raises(UnregisteredStateTypeError) as caught:
        state.to_builtins(value)
    assert caught.value.path == path


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_float_is_refused_with_its_path(bad: float) -> None:
    with pytest.raises(StateEncodingError, match=r"non-finite float .* at scores\[1\]") as caught:
        state.encode({"scores": [1.0, bad]})
    assert caught.value.path == "scores[1]"


def test_non_str_dict_key_is_refused_with_the_dict_path() -> None:
    with pytest.raises(StateEncodingError, match=r"dict key 7 of type builtins\.int") as caught:
        state.encode({"counts": {7: "seven"}})
    assert caught.value.path == "counts"


def test_encoder_failure_is_a_state_error_naming_the_path_with_the_cause() -> None:
    with pytest.raises(StateEncodingError, match=r"tests\.errors\.Fussy") as caught:
        state.encode({"f": [Fussy(13)]})
    assert caught.value.path == "f[0]"
    assert isinstance(caught.value.__cause__, RuntimeError)


@pytest.mark.parametrize("fmt", FORMATS)
def test_unknown_type_id_on_decode_names_the_id_and_path(fmt: state.Format) -> None:
    tree = {"notes": [1, {"$type": "gone.Module.Cls", "$value": {}}]}
    data = msgspec.json.encode(tree) if fmt == "json" else msgspec.msgpack.encode(tree)
    with pytest.raises(UnregisteredStateTypeError) as caught:
        state.decode(data, format=fmt, path="executor_states.reviewer")
    assert caught.value.type_name == "gone.Module.Cls"
    assert caught.value.path == "executor_states.reviewer.notes[1]"
    assert "'gone.Module.Cls'" in str(caught.value)


def test_unknown_type_id_inside_a_registered_value_names_the_field_path() -> None:
    data = msgspec.json.encode(
        {"w": {"$type": f"{__name__}.Wrapper", "$value": {"items": [{"$type": "nope"}]}}}
    )
    with pytest.raises(StateError) as caught:
        state.decode(data)
    assert caught.value.path == "w.items[0]"  # type: ignore[attr-defined]


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_bytes_fail_as_a_state_error(fmt: state.Format) -> None:
    data = state.encode({"a": (1, 2), "b": "x" * 50}, format=fmt)
    with pytest.raises(StateEncodingError, match=f"cannot decode {fmt} state"):
        state.decode(data[: len(data) // 2], format=fmt)


@pytest.mark.parametrize(("fmt", "garbage"), [("json", b"\x00{not json"), ("msgpack", b"\xc1")])
def test_garbage_bytes_fail_as_a_state_error(fmt: state.Format, garbage: bytes) -> None:
    with pytest.raises(StateEncodingError, match=f"cannot decode {fmt} state"):
        state.decode(garbage, format=fmt)


@pytest.mark.parametrize(
    "tag",
    [
        {"$type": "builtins.tuple", "$value": [1], "extra": 1},
        {"$type": "builtins.tuple"},
        {"$type": 3, "$value": []},
    ],
)
def test_malformed_tag_is_refused(tag: dict[str, Any]) -> None:
    with pytest.raises(StateEncodingError, match=r"malformed tagged value .* at x\[0\]"):
        state.decode(msgspec.json.encode({"x": [tag]}))


@pytest.mark.parametrize(
    "tag",
    [
        {"$type": "datetime.datetime", "$value": 17},
        {"$type": "datetime.date", "$value": "not a date"},
        {"$type": "builtins.tuple", "$value": "ab"},
        {"$type": "builtins.bytes", "$value": "***"},
        {"$type": "decimal.Decimal", "$value": 1.1},
        {"$type": "builtins.dict", "$value": [1]},
        {"$type": f"{__name__}.Wrapper", "$value": {"wrong_field": 1}},
    ],
)
def test_tag_with_a_bad_payload_is_refused_naming_the_type(tag: dict[str, Any]) -> None:
    with pytest.raises(StateEncodingError, match=r"cannot decode a .* value") as caught:
        state.decode(msgspec.json.encode({"x": tag}))
    assert caught.value.path == "x"


def test_unknown_format_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown state format 'yaml'"):
        state.encode({}, format="yaml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown state format 'yaml'"):
        state.decode(b"{}", format="yaml")  # type: ignore[arg-type]


def test_self_containing_state_is_refused_not_a_crash() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(StateEncodingError, match="or containing itself"):
        state.encode({"loop": loop})


def test_int_too_large_to_write_in_decimal_is_refused() -> None:
    with pytest.raises(StateEncodingError, match=r"too large at n") as caught:
        state.encode({"n": 10**5000})
    assert caught.value.path == "n"


def test_from_builtins_refuses_a_tree_that_is_not_msgspec_native() -> None:
    with pytest.raises(StateEncodingError, match=r"not a to_builtins\(\) tree at meta"):
        state.from_builtins({"x": 2**70}, path="meta")


@pytest.mark.parametrize(
    "type_id",
    ["collections.OrderedDict", "builtins.eval", "os.system", "wsgiref.simple_server.WSGIServer"],
)
def test_an_importable_but_unregistered_type_id_is_never_imported_or_built(type_id: str) -> None:
    fresh_module = "wsgiref.simple_server" not in sys.modules
    data = msgspec.json.encode({"x": {"$type": type_id, "$value": {}}})
    with pytest.raises(UnregisteredStateTypeError, match=re.escape(repr(type_id))):
        state.decode(data)
    assert not fresh_module or "wsgiref.simple_server" not in sys.modules
