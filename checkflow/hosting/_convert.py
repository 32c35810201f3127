"""Turn a JSON message into a value the workflow's start executor accepts.

A request body carries plain JSON; the start executor's handlers declare Python types. The
host tries each declared type with ``msgspec.convert`` (strict: no string-to-number guessing),
most specific first, and hands the first fit to the engine. This module must never guess a
type that was not declared, and never import the web framework.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Iterable
from typing import Any, Union, get_args, get_origin

import msgspec

from checkflow.errors import InvalidMessageError
from checkflow.workflows import convert_value, validation_detail

__all__ = ["MessageConverter", "describe_type"]


def _members(tp: Any) -> list[Any]:
    if get_origin(tp) in (Union, types.UnionType):
        return [m for arg in get_args(tp) for m in _members(arg)]
    return [type(None) if tp is None else tp]


def _is_record(tp: Any) -> bool:
    return isinstance(tp, type) and (
        dataclasses.is_dataclass(tp)
        or issubclass(tp, msgspec.Struct)
        or typing.is_typeddict(tp)
        or (issubclass(tp, tuple) and hasattr(tp, "_fields"))
        or callable(getattr(tp, "from_dict", None))
        or callable(getattr(tp, "model_validate", None))  # a pydantic model
    )


def _record_fields(tp: type) -> int:
    return len(_field_names(tp))


_SCALARS: tuple[type, ...] = (bool, int, float, str, bytes)


def _rank(tp: Any) -> tuple[int, int]:
    """Sort key: typed records, enums/literals, typed containers, scalars, bare ones, Any."""
    if _is_record(tp):
        return (0, -_record_fields(tp))
    if (isinstance(tp, type) and issubclass(tp, enum.Enum)) or get_origin(tp) is typing.Literal:
        return (1, 0)
    if get_origin(tp) is not None:
        return (2, 0)
    if tp in _SCALARS:
        return (3, _SCALARS.index(tp))
    if tp is type(None):
        return (5, 0)
    if tp is typing.Any or tp is object:
        return (6, 0)
    return (4, 0)


def describe_type(tp: Any) -> str:
    """A short, readable name for an annotation, for error messages and API bodies."""
    if isinstance(tp, type) and get_origin(tp) is None:
        return tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__qualname__}"
    return repr(tp).replace("typing.", "")


class MessageConverter:
    """Converts JSON values to the first declared input type that fits, most specific first."""

    def __init__(self, input_types: Iterable[Any]) -> None:
        seen: dict[Any, None] = {}
        for annotation in input_types:
            for member in _members(annotation):
                seen.setdefault(member, None)
        self.candidates: list[Any] = sorted(seen, key=_rank)

    @property
    def accepted_types(self) -> list[str]:
        return [describe_type(tp) for tp in self.candidates]

    def convert(self, value: Any) -> Any:
        """The converted message; ``InvalidMessageError`` if none fits, listing the accepted
        types and naming the field and reason of the closest one (an object is closest to a
        record type, anything else to the first type tried)."""
        failures: list[tuple[Any, BaseException]] = []
        for tp in self.candidates:
            if tp is typing.Any or tp is object:
                return value
            try:
                converted = convert_value(value, tp)
            except (msgspec.ValidationError, TypeError, ValueError, KeyError) as exc:
                failures.append((tp, exc))
                continue
            failures.clear()  # their tracebacks hold this frame: no cycle to leave behind
            return converted
        accepted = self.accepted_types
        closest = _closest(value, failures)
        field = reason = None
        detail = ""
        if closest is not None:
            field, reason = validation_detail(closest[1])
            detail = f" (as {describe_type(closest[0])}: {reason}" + (
                f" at {field})" if field else ")")
        raise InvalidMessageError(
            f"the message fits none of the workflow's input types: {', '.join(accepted)}"
            f"{detail}", accepted_types=accepted, field=field, reason=reason,
        )


def _field_names(tp: Any) -> set[str]:
    fields = (getattr(tp, "__struct_fields__", None) or getattr(tp, "model_fields", None)
              or getattr(tp, "__annotations__", None) or ())
    return {str(name) for name in fields}


def _closest(value: Any, failures: list[tuple[Any, BaseException]]
             ) -> tuple[Any, BaseException] | None:
    """The failed type the value was most likely meant as: for an object, the record type
    sharing the most field names with it; otherwise the first type tried."""
    if not failures:
        return None
    records = [f for f in failures if _is_record(f[0])] if isinstance(value, dict) else []
    if not records:
        return failures[0]
    keys = set(value)
    return max(records, key=lambda f: len(keys & _field_names(f[0])))  # ties: the first
