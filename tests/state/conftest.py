"""Fixtures for the state codec tests: a deep "equal AND of the same types" check."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import msgspec
import pytest


def _assert_same(expected: Any, actual: Any, where: str = "<root>") -> None:
    assert type(actual) is type(expected), f"{where}: {type(actual)} != {type(expected)}"
    assert actual == expected, f"{where}: {actual!r} != {expected!r}"
    if isinstance(expected, dict):
        assert list(actual) == list(expected), f"{where}: key order differs"
        for key, value in expected.items():
            _assert_same(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, list | tuple):
        for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
            _assert_same(left, right, f"{where}[{index}]")
    elif isinstance(expected, set | frozenset):
        by_value = {member: member for member in actual}
        for member in expected:
            _assert_same(member, by_value[member], f"{where}{{{member!r}}}")
    elif isinstance(expected, msgspec.Struct):
        for name in expected.__struct_fields__:
            _assert_same(getattr(expected, name), getattr(actual, name), f"{where}.{name}")
    elif dataclasses.is_dataclass(expected):
        for field in dataclasses.fields(expected):
            name = field.name
            _assert_same(getattr(expected, name), getattr(actual, name), f"{where}.{name}")
    elif hasattr(expected, "tzinfo") and expected.tzinfo is not None:
        assert actual.utcoffset() == expected.utcoffset(), f"{where}: offset differs"


@pytest.fixture(scope="session")
def assert_same() -> Callable[[Any, Any], None]:
    """Assert two values are equal and of the same types all the way down."""
    return _assert_same
