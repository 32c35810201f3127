"""Inspection decoding shows state holding unknown types; normal decoding refuses it."""

from __future__ import annotations

import msgspec
import pytest

from checkflow import state
from checkflow.errors import UnregisteredStateTypeError

DATA = msgspec.json.encode(
    {
        "known": {"$type": "builtins.tuple", "$value": [1, 2]},
        "unknown": {
            "$type": "elsewhere.Plugin",
            "$value": {"span": {"$type": "builtins.tuple", "$value": [3]}},
        },
    }
)


def test_unknown_type_becomes_an_opaque_value_with_its_id_and_payload() -> None:
    shown = state.decode_for_inspection(DATA)
    assert shown["unknown"] == state.OpaqueValue("elsewhere.Plugin", {"span": (3,)})


def test_known_types_still_decode_during_inspection() -> None:
    assert state.decode_for_inspection(DATA)["known"] == (1, 2)


def test_inspection_reads_msgpack_too() -> None:
    data = msgspec.msgpack.encode({"$type": "elsewhere.Plugin", "$value": b"raw"})
    assert state.decode_for_inspection(data, format="msgpack") == state.OpaqueValue(
        "elsewhere.Plugin", b"raw"
    )


def test_normal_decode_of_the_same_bytes_refuses_the_unknown_type() -> None:
    with pytest.raises(UnregisteredStateTypeError, match=r"elsewhere\.Plugin"):
        state.decode(DATA)
