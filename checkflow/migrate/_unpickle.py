"""The restricted unpickler for v1 checkpoint values: builtin value types and named types only.

v1 wrote non-JSON values as ``{"__pickled__": base64, "__type__": "module:qualname"}``. This
module decodes those markers with an unpickler whose ``find_class`` admits only builtin value
types (numbers, strings, bytes, containers, datetime, uuid, decimal) and the types the
operator named with ``--allow-type``; anything else is refused with ``V1TypeRefusedError``
before any of its code runs. v1's own envelope types (``WorkflowMessage``, ``WorkflowEvent``
and their enums) are read structurally into ``V1Object`` records, never imported. This module
must never call ``pickle.loads`` or import the previous generation's package.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import io
import pickle
from collections.abc import Iterable
from typing import Any, ClassVar, Self

from checkflow.errors import MigrationError, V1TypeRefusedError

__all__ = ["V1Object", "decode_v1_value", "parse_type_names"]

PICKLED, TYPE = "__pickled__", "__type__"

_BUILTIN_TYPES = frozenset({
    *(f"builtins:{n}" for n in ("bool", "bytearray", "bytes", "complex", "dict", "float",
                                "frozenset", "int", "list", "range", "set", "slice", "str",
                                "tuple")),
    "datetime:date", "datetime:datetime", "datetime:time", "datetime:timedelta",
    "datetime:timezone", "uuid:UUID", "decimal:Decimal",
    "collections:OrderedDict", "collections:deque", "collections:Counter",
})
"""The value types every migration admits: data, never behaviour."""

_V1 = "agent_framework._workflows."
_V1_RECORDS = frozenset({_V1 + "_runner_context:WorkflowMessage",
                         _V1 + "_events:WorkflowEvent"})
_V1_ENUMS = frozenset({_V1 + "_runner_context:MessageType",
                       _V1 + "_events:WorkflowEventSource"})


class V1Object:
    """A v1 framework envelope (a message or an event) read as its type name and fields."""

    __slots__ = ("fields",)
    fields: dict[str, Any]
    v1_type: ClassVar[str] = ""

    def __new__(cls, *args: Any) -> Self:  # what pickle's NEWOBJ calls
        obj = super().__new__(cls)
        obj.fields = {}
        return obj

    def __setstate__(self, state: Any) -> None:
        parts = state if isinstance(state, tuple) else (state,)  # (__dict__, slots) or __dict__
        if not all(isinstance(p, dict) or p is None for p in parts):
            raise MigrationError(f"a {self.v1_type} whose pickled state is not a mapping")
        for part in parts:
            self.fields.update(part or {})

    def __repr__(self) -> str:
        return f"V1Object({self.v1_type!r}, {self.fields!r})"


_RECORD_CLASSES: dict[str, type[V1Object]] = {
    key: type(key.rpartition(":")[2], (V1Object,), {"__slots__": (), "v1_type": key})
    for key in _V1_RECORDS
}


def _enum_value(value: Any) -> Any:
    """v1's enums were pickled as ``EnumClass(value)``: keep the value."""
    return value


def parse_type_names(names: Iterable[str]) -> frozenset[str]:
    """Check ``--allow-type`` values are ``module:QualName``."""
    found = set()
    for name in names:
        module, sep, qualname = name.partition(":")
        if not sep or not module or not qualname:
            raise ValueError(f"--allow-type takes module:QualName, not {name!r}")
        found.add(name)
    return frozenset(found)


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, allowed: frozenset[str], file: str) -> None:
        super().__init__(io.BytesIO(data))
        self._allowed = allowed
        self._file = file

    def find_class(self, module: str, name: str) -> Any:
        key = f"{module}:{name}"
        if key in _RECORD_CLASSES:
            return _RECORD_CLASSES[key]
        if key in _V1_ENUMS:
            return _enum_value
        if key in _BUILTIN_TYPES:
            return super().find_class(module, name)
        if key in self._allowed and "." not in name:
            try:
                found = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError) as exc:
                raise MigrationError(
                    f"{self._file}: --allow-type {key} names no importable class "
                    f"({type(exc).__name__}: {exc})") from exc
            if isinstance(found, type):
                return found
        raise V1TypeRefusedError(key, self._file)


def decode_v1_value(value: Any, *, allowed: frozenset[str], file: str) -> Any:
    """Decode one JSON value of a v1 file, unpickling its markers under the restrictions."""
    if isinstance(value, list):
        return [decode_v1_value(v, allowed=allowed, file=file) for v in value]
    if not isinstance(value, dict):
        return value
    if PICKLED in value and TYPE in value:
        try:
            data = base64.b64decode(str(value[PICKLED]).encode("ascii"), validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError) as exc:
            raise MigrationError(f"{file}: a pickled value that is not base64 ({exc})") from exc
        try:
            return _Unpickler(data, allowed, file).load()
        except MigrationError:
            raise
        except Exception as exc:
            raise MigrationError(
                f"{file}: a pickled {value[TYPE]} that cannot be read "
                f"({type(exc).__name__}: {exc})") from exc
    return {k: decode_v1_value(v, allowed=allowed, file=file) for k, v in value.items()}
