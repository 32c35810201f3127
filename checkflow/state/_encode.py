"""The encode walker: any supported state value -> the tagged, msgspec-native tree.

Hot path. Dispatch is on the exact type (``type(v) is str``) so subclasses never slip through
as their base; plain scalars inside containers are copied without a call. Paths are built only
when something fails (see ``_paths``). Every handler takes ``room``, the container levels the
tagged tree may still open at that point (a tag mapping and its list payload count one each),
so the nesting limit is enforced exactly during the one walk, and a cycle is refused, never
a ``RecursionError`` and never a second pass over the tree. This module must never call
user code except through a registered type's ``to_raw`` and must never fall back to ``repr``,
pickle or ``__dict__``.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from checkflow.state._paths import TooDeepError, WalkError, qualified_name
from checkflow.state._registry import (
    BUILTIN_TYPE_IDS,
    TYPE_KEY,
    VALUE_KEY,
    registered_by_type,
)

__all__ = ["encode_value"]

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1  # MessagePack carries int64 and uint64 natively

_ID_INT = BUILTIN_TYPE_IDS["int"]
_ID_DICT = BUILTIN_TYPE_IDS["dict"]
_ID_TUPLE = BUILTIN_TYPE_IDS["tuple"]
_ID_SET = BUILTIN_TYPE_IDS["set"]
_ID_FROZENSET = BUILTIN_TYPE_IDS["frozenset"]
_ID_DATETIME = BUILTIN_TYPE_IDS["datetime"]
_ID_TIME = BUILTIN_TYPE_IDS["time"]
_UTC = datetime.UTC
_DATETIME = datetime.datetime
_PLAIN = frozenset({str, bool, type(None)})  # copied as they are, no check needed
_rfc3339: Callable[[datetime.datetime], str] = msgspec.to_builtins


def encode_value(value: Any, room: int) -> Any:
    """Return ``value`` as msgspec-native data nesting at most ``room`` containers deep.

    Raises ``WalkError`` on refusal and ``TooDeepError`` past the limit.
    """
    t = type(value)
    if t in _PLAIN:
        return value
    return _HANDLERS[t](value, room)


def _no_room() -> TooDeepError:
    return TooDeepError()


def _encode_int(value: int, room: int) -> Any:
    if _INT_MIN <= value <= _INT_MAX:
        return value
    if room < 1:
        raise _no_room()
    try:
        return {TYPE_KEY: _ID_INT, VALUE_KEY: str(value)}
    except ValueError as exc:  # beyond sys.get_int_max_str_digits()
        raise WalkError(f"int with {value.bit_length()} bits is too large", child=value) from exc


def _encode_float(value: float, room: int) -> float:
    if value - value == 0.0:  # false for nan and +-inf
        return value
    raise WalkError(f"non-finite float {value!r} cannot be stored", child=value)


def _encode_dict(d: dict[Any, Any], room: int) -> dict[str, Any]:
    # The hottest loop: scalars, small scalar tuples and UTC/naive datetimes (the bulk of
    # real state) are handled inline, without a call; everything else goes to its handler.
    if room < 1:
        raise _no_room()
    inner = room - 1
    inline_tags = inner >= 1  # a datetime's tag mapping is one level below this dict
    out: dict[str, Any] = {}
    try:
        for key, value in d.items():
            if type(key) is not str:
                raise WalkError(
                    f"dict key {key!r} of type {qualified_name(type(key))} is not a str"
                )
            t = type(value)
            if (
                t in _PLAIN
                or (t is int and _INT_MIN <= value <= _INT_MAX)
                or (t is float and value - value == 0.0)  # finite
            ):
                out[key] = value
            elif t is _DATETIME and inline_tags and (value.tzinfo is None or value.tzinfo is _UTC):
                out[key] = {TYPE_KEY: _ID_DATETIME, VALUE_KEY: _rfc3339(value)}
            else:
                out[key] = _HANDLERS[t](value, inner)
    except WalkError as error:
        error.enter(d)
        raise
    if TYPE_KEY in out:  # escape: a user dict holding the tag key must never read as a tag
        # The escape mapping adds a level, so the items are encoded again one level deeper
        # (rare: only dicts that hold the tag key pay twice).
        return {TYPE_KEY: _ID_DICT, VALUE_KEY: _encode_payload_dict(d, room - 1)}
    return out


def _encode_payload_dict(d: dict[str, Any], room: int) -> dict[str, Any]:
    if room < 1:
        raise _no_room()
    out: dict[str, Any] = {}
    try:
        for key, value in d.items():
            out[key] = encode_value(value, room - 1)
    except WalkError as error:
        error.enter(d)
        raise
    return out


def _encode_items(container: Any, items: Iterable[Any], room: int) -> list[Any]:
    if room < 1:
        raise _no_room()
    inner = room - 1
    out: list[Any] = []
    append = out.append
    try:
        for item in items:
            t = type(item)
            if (
                t in _PLAIN
                or (t is int and _INT_MIN <= item <= _INT_MAX)
                or (t is float and item - item == 0.0)  # finite
            ):
                append(item)
            else:
                append(_HANDLERS[t](item, inner))
    except WalkError as error:
        error.enter(container, items)
        raise
    return out


def _encode_list(value: list[Any], room: int) -> list[Any]:
    return _encode_items(value, value, room)


def _encode_tuple(value: tuple[Any, ...], room: int) -> dict[str, Any]:
    if room < 2:  # the tag mapping and its list
        raise _no_room()
    for item in value:  # most tuples hold only scalars: then a plain copy will do
        t = type(item)
        if not (t in _PLAIN or (t is int and _INT_MIN <= item <= _INT_MAX)):
            return {TYPE_KEY: _ID_TUPLE, VALUE_KEY: _encode_items(value, value, room - 1)}
    return {TYPE_KEY: _ID_TUPLE, VALUE_KEY: list(value)}


def _encode_datetime(value: datetime.datetime, room: int) -> dict[str, Any]:
    # msgspec formats RFC 3339 in C, ~10x faster than isoformat(), but rounds an offset
    # with seconds to whole minutes: those (rare) offsets take the exact path.
    tz = value.tzinfo
    if room >= 1 and (tz is None or tz is _UTC):
        return {TYPE_KEY: _ID_DATETIME, VALUE_KEY: _rfc3339(value)}
    offset = value.utcoffset()
    if offset is not None and offset.seconds % 60 == 0 and not offset.microseconds:
        return _tag(_ID_DATETIME, _rfc3339(value), room)
    return _tag(_ID_DATETIME, _iso_with_offset(value, offset), room)


def _encode_time(value: datetime.time, room: int) -> dict[str, Any]:
    return _tag(_ID_TIME, _iso_with_offset(value, value.utcoffset()), room)


def _tag(type_id: str, payload: Any, room: int) -> dict[str, Any]:
    """A tag mapping around a ready payload (a scalar, or a list of scalars: one more level)."""
    if room < (2 if type(payload) is list else 1):
        raise _no_room()
    return {TYPE_KEY: type_id, VALUE_KEY: payload}


def _iso_with_offset(
    value: datetime.datetime | datetime.time, offset: datetime.timedelta | None
) -> Any:
    """ISO 8601, or ``[naive ISO, offset seconds, offset microseconds]`` for an offset with
    microseconds, which ``fromisoformat`` (3.11) misreads when its whole seconds are zero."""
    if offset is None or not offset.microseconds:
        return value.isoformat()
    naive = value.replace(tzinfo=None).isoformat()
    return [naive, offset.days * 86_400 + offset.seconds, offset.microseconds]


Handler = Callable[[Any, int], Any]


def _tagged_members(type_id: str) -> Handler:
    def encode(value: Any, room: int) -> dict[str, Any]:
        if room < 2:
            raise _no_room()
        try:  # sorted when possible: equal sets give equal bytes in every process
            members: list[Any] = sorted(value)
        except TypeError:
            members = list(value)
        return {TYPE_KEY: type_id, VALUE_KEY: _encode_items(value, members, room - 1)}

    return encode


def _tagged(type_id: str, to_raw: Callable[[Any], Any]) -> Handler:
    return lambda value, room: _tag(type_id, to_raw(value), room)


def _timedelta_raw(value: datetime.timedelta) -> list[int]:
    return [value.days, value.seconds, value.microseconds]


class _Dispatch(dict[type[Any], Handler]):
    """Exact type -> encoder; a miss (only registered or unsupported types) goes to the registry."""

    def __missing__(self, cls: type[Any]) -> Handler:
        return _encode_registered


_HANDLERS = _Dispatch(
    {
        int: _encode_int,
        float: _encode_float,
        dict: _encode_dict,
        list: _encode_list,
        tuple: _encode_tuple,
        set: _tagged_members(_ID_SET),
        frozenset: _tagged_members(_ID_FROZENSET),
        bytes: _tagged(BUILTIN_TYPE_IDS["bytes"], lambda value: value),
        datetime.datetime: _encode_datetime,
        datetime.date: _tagged(BUILTIN_TYPE_IDS["date"], datetime.date.isoformat),
        datetime.time: _encode_time,
        datetime.timedelta: _tagged(BUILTIN_TYPE_IDS["timedelta"], _timedelta_raw),
        uuid.UUID: _tagged(BUILTIN_TYPE_IDS["uuid"], str),
        decimal.Decimal: _tagged(BUILTIN_TYPE_IDS["decimal"], str),
    }
)


def _encode_registered(value: Any, room: int) -> dict[str, Any]:
    cls = type(value)
    entry = registered_by_type.get(cls)
    if entry is None:
        name = qualified_name(cls)
        raise WalkError(
            f"cannot encode a value of unregistered type {name}",
            child=value,
            unregistered=name,
            hint="; register it with checkflow.state.register_state_type",
        )
    if room < 1:
        raise _no_room()
    try:
        raw = entry.to_raw(value)
    except Exception as exc:
        raise WalkError(f"the encoder of {entry.type_id!r} raised {exc!r}", child=value) from exc
    try:
        return {TYPE_KEY: entry.type_id, VALUE_KEY: encode_value(raw, room - 1)}
    except WalkError as error:
        error.skip(value)
        raise
