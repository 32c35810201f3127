"""Field type checks for registered dataclasses and msgspec Structs, applied when decoding.

Their default codec rebuilds an object with ``cls(**fields)``, which checks nothing: stored
data saying ``Point(x="a", y=[1])`` would come back as exactly that. Decoding therefore checks
each field's already-decoded value against the field's annotation, as ``msgspec.inspect``
describes it: scalar and container types, unions, literals, enums and classes (by
``isinstance``). Value constraints (``Meta(ge=...)``) are not checked. The walk follows the
annotation, never the data, so it is as deep as the type is. This module must never build or
convert a value: it only says what is wrong.
"""

from __future__ import annotations

import datetime
import decimal
import threading
import uuid
from collections.abc import Callable
from typing import Any

from msgspec import inspect as mi

__all__ = ["field_checker"]

Checker = Callable[[dict[str, Any]], None]

_SIMPLE: dict[type[Any], tuple[type[Any], ...]] = {
    mi.StrType: (str,),
    mi.BytesType: (bytes,),
    mi.ByteArrayType: (bytearray,),
    mi.MemoryViewType: (memoryview, bytes),
    mi.DateTimeType: (datetime.datetime,),
    mi.TimeType: (datetime.time,),
    mi.TimeDeltaType: (datetime.timedelta,),
    mi.UUIDType: (uuid.UUID,),
    mi.DecimalType: (decimal.Decimal,),
}
_SEQUENCES: dict[type[Any], type[Any]] = {
    mi.ListType: list,
    mi.SetType: set,
    mi.FrozenSetType: frozenset,
    mi.VarTupleType: tuple,
}
# Types checked by ``isinstance(value, t.cls)`` (``AttrsType`` only in newer msgspec).
_CLASSES: tuple[type[Any], ...] = tuple(
    getattr(mi, name)
    for name in ("StructType", "DataclassType", "EnumType", "CustomType", "NamedTupleType",
                 "AttrsType")
    if hasattr(mi, name)
)


def field_checker(cls: type[Any]) -> Checker:
    """A function raising ``TypeError`` naming the first field of ``cls`` whose value is wrong.

    The annotations are resolved on first use (so they may name classes defined later); a
    class msgspec cannot introspect is built unchecked, as before.
    """
    fields: list[tuple[str, Any]] | None = None
    lock = threading.Lock()

    def check(raw: dict[str, Any]) -> None:
        nonlocal fields
        if fields is None:
            with lock:
                fields = _fields(cls)
        for name, annotation in fields:
            if name in raw:
                problem = _problem(raw[name], annotation)
                if problem is not None:
                    raise TypeError(f"field {name!r} of {cls.__qualname__}: {problem}")

    return check


def _fields(cls: type[Any]) -> list[tuple[str, Any]]:
    try:
        info = mi.type_info(cls)
    except Exception:  # unresolvable annotations: nothing to check against
        return []
    return [(field.name, field.type) for field in getattr(info, "fields", ())]


def _problem(value: Any, t: Any) -> str | None:
    """Why ``value`` does not fit the msgspec type ``t``; ``None`` when it does."""
    kind = type(t)
    if kind is mi.Metadata:
        return _problem(value, t.type)
    if kind is mi.AnyType or kind is mi.RawType or kind is mi.ExtType:
        return None
    if kind is mi.NoneType:
        return None if value is None else _wrong(value, "None")
    if kind is mi.BoolType:
        return None if type(value) is bool else _wrong(value, "bool")
    if kind is mi.IntType:
        return None if type(value) is int else _wrong(value, "int")
    if kind is mi.FloatType:
        return None if type(value) in (int, float) else _wrong(value, "float")
    if kind is mi.DateType:
        ok = type(value) is datetime.date  # a datetime is a date subclass, but not a date field
        return None if ok else _wrong(value, "date")
    simple = _SIMPLE.get(kind)
    if simple is not None:
        return None if isinstance(value, simple) else _wrong(value, simple[0].__name__)
    if kind is mi.UnionType:
        for option in t.types:
            if _problem(value, option) is None:
                return None
        return _wrong(value, " | ".join(_name(option) for option in t.types))
    if kind is mi.LiteralType:
        return None if value in t.values else f"{value!r} is not one of {list(t.values)!r}"
    sequence = _SEQUENCES.get(kind)
    if sequence is not None:
        if not isinstance(value, sequence):
            return _wrong(value, sequence.__name__)
        return _items(enumerate(value), t.item_type)
    if kind is mi.TupleType:
        if not isinstance(value, tuple) or len(value) != len(t.item_types):
            return _wrong(value, f"tuple of {len(t.item_types)}")
        for index, (item, item_type) in enumerate(zip(value, t.item_types, strict=True)):
            problem = _problem(item, item_type)
            if problem is not None:
                return f"[{index}]: {problem}"
        return None
    if kind is mi.DictType:
        if not isinstance(value, dict):
            return _wrong(value, "dict")
        return _items(((repr(k), k) for k in value), t.key_type) or _items(
            ((repr(k), v) for k, v in value.items()), t.value_type
        )
    if kind is mi.TypedDictType:
        return None if isinstance(value, dict) else _wrong(value, "dict")
    if isinstance(t, _CLASSES):
        return None if isinstance(value, t.cls) else _wrong(value, t.cls.__qualname__)
    return None  # a type msgspec describes that this check does not know: accept


def _items(items: Any, item_type: Any) -> str | None:
    if type(item_type) is mi.AnyType:
        return None
    for index, item in items:
        problem = _problem(item, item_type)
        if problem is not None:
            return f"[{index}]: {problem}"
    return None


def _wrong(value: Any, expected: str) -> str:
    return f"expected {expected}, got {type(value).__qualname__} {_short(value)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _name(t: Any) -> str:
    cls = getattr(t, "cls", None)
    if cls is not None:
        return str(cls.__qualname__)
    return type(t).__name__.removesuffix("Type").lower()

