"""The one process-wide registry of state types: which classes the codec may build.

Decoding can only construct classes registered here in this process: there is no pickle, no
import by name and no eval anywhere in the codec. This module decides *how* a registered class
becomes plain data and back (its "raw" form); the walkers in ``_encode``/``_decode`` handle
everything inside that raw form. It must never import the walkers.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, overload

import msgspec

from checkflow.state._fields import field_checker
from checkflow.state._paths import qualified_name

__all__ = [
    "BUILTIN_TYPE_IDS",
    "TYPE_KEY",
    "VALUE_KEY",
    "StateType",
    "is_registered",
    "register_state_type",
    "registered_by_id",
    "registered_by_type",
    "registered_type",
    "state_type_id",
]

T = TypeVar("T")

TYPE_KEY = "$type"
VALUE_KEY = "$value"

#: Type ids the codec itself uses for values JSON and MessagePack cannot carry as they are.
#: They are reserved: no registration may take one of these ids or classes.
BUILTIN_TYPE_IDS: dict[str, str] = {
    "int": "builtins.int",  # only ints outside the 64-bit range
    "dict": "builtins.dict",  # an escaped user dict that holds the tag key
    "tuple": "builtins.tuple",
    "set": "builtins.set",
    "frozenset": "builtins.frozenset",
    "bytes": "builtins.bytes",
    "datetime": "datetime.datetime",
    "date": "datetime.date",
    "time": "datetime.time",
    "timedelta": "datetime.timedelta",
    "uuid": "uuid.UUID",
    "decimal": "decimal.Decimal",
}

#: The envelope of the typed layout (see ``_typed``), reserved like the built-in ids.
TYPED_LAYOUT_ID = "checkflow.typed"

_RESERVED_IDS = frozenset(BUILTIN_TYPE_IDS.values()) | {TYPED_LAYOUT_ID}
_RESERVED_CLASSES: frozenset[type] = frozenset(
    {str, int, float, bool, type(None), list, dict, tuple, set, frozenset, bytes, object}
    | {datetime.datetime, datetime.date, datetime.time, datetime.timedelta}
    | {uuid.UUID, decimal.Decimal}
)


class StateType(NamedTuple):
    """One registration: the class, its stable id and its conversion to and from raw data."""

    cls: type[Any]
    type_id: str
    to_raw: Callable[[Any], Any]
    from_raw: Callable[[Any], Any]
    encoder: Callable[[Any], Any] | None
    decoder: Callable[[Any], Any] | None


# Read by the walkers on every registered value; only ``register_state_type`` writes them.
registered_by_type: dict[type[Any], StateType] = {}
registered_by_id: dict[str, StateType] = {}
_lock = threading.Lock()


@overload
def register_state_type(cls: type[T], /) -> type[T]: ...


@overload
def register_state_type(
    cls: None = None,
    /,
    *,
    type_id: str | None = None,
    encoder: Callable[[Any], Any] | None = None,
    decoder: Callable[[Any], Any] | None = None,
) -> Callable[[type[T]], type[T]]: ...


@overload
def register_state_type(
    cls: type[T],
    /,
    *,
    type_id: str | None = None,
    encoder: Callable[[Any], Any] | None = None,
    decoder: Callable[[Any], Any] | None = None,
) -> type[T]: ...


def register_state_type(
    cls: type[T] | None = None,
    /,
    *,
    type_id: str | None = None,
    encoder: Callable[[Any], Any] | None = None,
    decoder: Callable[[Any], Any] | None = None,
) -> type[T] | Callable[[type[T]], type[T]]:
    """Allow instances of ``cls`` in checkpoint and session state; returns ``cls``.

    Use it as a call, a bare ``@register_state_type`` decorator, or
    ``@register_state_type(type_id=...)``. The type id (default ``module.QualName``) is what
    the encoded data names, so keep it stable across renames by passing it explicitly.
    Without ``encoder``/``decoder`` the class must be an Enum, a msgspec Struct, a dataclass,
    a Pydantic model, or have ``to_dict()`` and a ``from_dict()`` classmethod. Registering the
    same class with the same id and codec again is a no-op; any other clash raises
    ``ValueError`` now rather than corrupting data later.
    """

    def register(target: type[T]) -> type[T]:
        _register(target, type_id, encoder, decoder)
        return target

    return register if cls is None else register(cls)


def is_registered(cls: type) -> bool:
    """Whether instances of exactly ``cls`` can be encoded (subclasses need their own entry)."""
    return cls in registered_by_type


def registered_type(type_id: str) -> type[Any] | None:
    """The class registered under ``type_id`` in this process, if any."""
    entry = registered_by_id.get(type_id)
    return None if entry is None else entry.cls


def state_type_id(cls: type) -> str | None:
    """The type id ``cls`` is registered under, if it is registered."""
    entry = registered_by_type.get(cls)
    return None if entry is None else entry.type_id


def _register(
    cls: type[Any],
    type_id: str | None,
    encoder: Callable[[Any], Any] | None,
    decoder: Callable[[Any], Any] | None,
) -> None:
    if not isinstance(cls, type):
        raise TypeError(f"register_state_type() expects a class, got {cls!r}")
    if (encoder is None) != (decoder is None):
        raise ValueError(f"{qualified_name(cls)}: pass both encoder and decoder, or neither")
    tid = qualified_name(cls) if type_id is None else type_id
    if not isinstance(tid, str) or not tid:
        raise ValueError(f"{qualified_name(cls)}: type_id must be a non-empty str, got {tid!r}")
    if cls in _RESERVED_CLASSES:
        raise ValueError(f"{qualified_name(cls)} is built into the state codec; do not register it")
    if tid in _RESERVED_IDS:
        raise ValueError(f"type id {tid!r} is reserved by the state codec")
    to_raw, from_raw = (encoder, decoder) if encoder and decoder else _default_codec(cls)
    entry = StateType(cls, tid, to_raw, from_raw, encoder, decoder)
    with _lock:
        clash = registered_by_id.get(tid)
        if clash is not None and clash.cls is not cls:
            raise ValueError(
                f"type id {tid!r} is already registered for {qualified_name(clash.cls)}; "
                f"cannot register {qualified_name(cls)} under it"
            )
        existing = registered_by_type.get(cls)
        if existing is None:  # ids and classes are always registered together
            registered_by_id[tid] = registered_by_type[cls] = entry
        elif existing.type_id != tid:
            raise ValueError(
                f"{qualified_name(cls)} is already registered as {existing.type_id!r}; "
                f"cannot register it again as {tid!r}"
            )
        elif (existing.encoder, existing.decoder) != (encoder, decoder):
            raise ValueError(
                f"{qualified_name(cls)} is already registered as {tid!r} with another "
                "encoder/decoder"
            )


def _default_codec(cls: type[Any]) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """How a registered class without an explicit encoder/decoder becomes raw data and back."""
    if issubclass(cls, enum.Enum):
        return _enum_value, cls
    if issubclass(cls, msgspec.Struct):
        names = cls.__struct_fields__
        check = field_checker(cls)

        def from_struct_raw(raw: dict[str, Any]) -> Any:
            check(_expect_dict(cls, raw))
            return cls(**raw)

        return (lambda obj: {name: getattr(obj, name) for name in names}), from_struct_raw
    if dataclasses.is_dataclass(cls):
        return _dataclass_codec(cls)
    pydantic = sys.modules.get("pydantic")  # a model's class implies pydantic is imported
    if pydantic is not None and issubclass(cls, pydantic.BaseModel):
        return (lambda obj: obj.model_dump(mode="python", round_trip=True)), (cls.model_validate)
    if callable(getattr(cls, "to_dict", None)) and callable(getattr(cls, "from_dict", None)):
        return (lambda obj: obj.to_dict()), cls.from_dict
    raise TypeError(
        f"{qualified_name(cls)} has no default state codec: make it an Enum, a msgspec Struct, "
        "a dataclass, a Pydantic model or give it to_dict()/from_dict(), or pass "
        "encoder= and decoder="
    )


def _expect_dict(cls: type[Any], raw: Any) -> dict[str, Any]:
    if type(raw) is not dict:
        raise TypeError(f"expected the fields of {qualified_name(cls)}, got {type(raw).__name__}")
    return raw


def _enum_value(member: enum.Enum) -> Any:
    return member.value


def _dataclass_codec(cls: type[Any]) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    fields = dataclasses.fields(cls)
    names = [field.name for field in fields]
    late = frozenset(field.name for field in fields if not field.init)
    check = field_checker(cls)

    def to_raw(obj: Any) -> dict[str, Any]:
        return {name: getattr(obj, name) for name in names}

    def from_raw(raw: dict[str, Any]) -> Any:
        check(_expect_dict(cls, raw))
        if not late:
            return cls(**raw)
        obj = cls(**{k: v for k, v in raw.items() if k not in late})
        for name in late & raw.keys():
            object.__setattr__(obj, name, raw[name])  # frozen dataclasses too
        return obj

    return to_raw, from_raw
