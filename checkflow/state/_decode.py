"""The decode walker: the tagged, msgspec-native tree -> the original Python values.

It works IN PLACE on a tree the caller owns (a fresh msgspec decode): only containers are
visited and only tagged mappings are replaced, so plain data costs one type check per item.
Decoding builds only the codec's built-in types and classes registered in this process; an
unknown type id fails (or, for inspection only, becomes a placeholder). This module must never
import classes by name, eval, or unpickle.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from checkflow.state._paths import TooDeepError, WalkError
from checkflow.state._registry import BUILTIN_TYPE_IDS, TYPE_KEY, VALUE_KEY, registered_by_id

__all__ = ["make_decoder"]

Walk = Callable[[Any, int], Any]


def make_decoder(on_unknown: Callable[[str, Any], Any] | None) -> Walk:
    """Build a walker; ``on_unknown(type_id, payload)`` replaces unknown tags when given.

    Without it an unknown type id raises. The walker mutates and returns its argument, nesting
    at most ``room`` containers deep (else ``TooDeepError``, checked as it goes). The
    three mutually recursive walkers are closures over ``on_unknown`` so the hot path passes
    no extra argument and looks nothing up per item; that keeps them in one function.
    """

    def walk(value: Any, room: int) -> Any:
        t = type(value)
        if t is dict:
            if TYPE_KEY in value:
                return walk_dict(value, room)
            return walk_slots(value, value.items(), room)
        if t is list:
            return walk_slots(value, enumerate(value), room)
        return value

    def walk_slots(container: Any, slots: Iterable[tuple[Any, Any]], room: int) -> Any:
        if room < 1:
            raise TooDeepError()
        inner = room - 1
        try:
            for slot, value in slots:
                t = type(value)
                if t is dict:
                    if TYPE_KEY in value:
                        container[slot] = walk_dict(value, inner)
                    else:
                        walk_slots(value, value.items(), inner)
                elif t is list:
                    walk_slots(value, enumerate(value), inner)
        except WalkError as error:
            error.enter(container)
            raise
        return container

    def walk_dict(d: dict[str, Any], room: int) -> Any:
        if room < 1:
            raise TooDeepError()
        type_id = d[TYPE_KEY]
        if len(d) != 2 or VALUE_KEY not in d or type(type_id) is not str:
            raise WalkError(f"malformed tagged value {_short(d)}", child=d)
        payload = d[VALUE_KEY]
        inner = room - 1
        try:
            builtin = _BUILTINS.get(type_id)
            if builtin is not None:
                if type(payload) is list:
                    if inner < 1:
                        raise TooDeepError()
                    for item in payload:  # most payloads hold only scalars: skip the walk
                        if type(item) is dict or type(item) is list:
                            walk_slots(payload, enumerate(payload), inner)
                            break
                return builtin(payload)
            if type_id == _ID_DICT:
                return walk_slots(payload, _expect(payload, dict).items(), inner)
            entry = registered_by_id.get(type_id)
            if entry is None:
                if on_unknown is not None:
                    return on_unknown(type_id, walk(payload, inner))
                raise WalkError(
                    f"cannot decode unknown state type id {type_id!r}",
                    child=d,
                    unregistered=type_id,
                    hint="; register its class with checkflow.state.register_state_type",
                )
            return entry.from_raw(walk(payload, inner))
        except (WalkError, TooDeepError) as error:
            if isinstance(error, WalkError):
                error.skip(d)
            raise
        except Exception as exc:
            raise WalkError(f"cannot decode a {type_id!r} value: {exc}", child=d) from exc

    return walk


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _expect(payload: Any, kind: type[Any]) -> Any:
    if type(payload) is not kind:
        raise TypeError(f"expected a {kind.__name__} payload, got {type(payload).__name__}")
    return payload


def _bytes(payload: Any) -> bytes:
    if type(payload) is bytes:  # MessagePack carries bytes natively
        return payload
    return base64.b64decode(_expect(payload, str), validate=True)


def _big_int(payload: Any) -> int:
    return int(_expect(payload, str))


def _decimal(payload: Any) -> decimal.Decimal:
    return decimal.Decimal(_expect(payload, str))  # never from a float: that would round


def _timedelta(payload: Any) -> datetime.timedelta:
    days, seconds, microseconds = _expect(payload, list)
    return datetime.timedelta(days=days, seconds=seconds, microseconds=microseconds)


def _with_offset(parse: Callable[[str], Any]) -> Callable[[Any], Any]:
    """ISO 8601 text, or ``[naive ISO, offset seconds, offset microseconds]`` (see _encode)."""

    def decode(payload: Any) -> Any:
        if type(payload) is str:
            return parse(payload)
        naive, seconds, microseconds = _expect(payload, list)
        offset = datetime.timedelta(seconds=seconds, microseconds=microseconds)
        return parse(naive).replace(tzinfo=datetime.timezone(offset))

    return decode


def _from_list(build: Callable[[list[Any]], Any]) -> Callable[[Any], Any]:
    def decode(payload: Any) -> Any:
        if type(payload) is not list:
            raise TypeError(f"expected a list payload, got {type(payload).__name__}")
        return build(payload)

    return decode


_ID_DICT = BUILTIN_TYPE_IDS["dict"]
_BUILTINS: dict[str, Callable[[Any], Any]] = {
    BUILTIN_TYPE_IDS["int"]: _big_int,
    BUILTIN_TYPE_IDS["tuple"]: _from_list(tuple),
    BUILTIN_TYPE_IDS["set"]: _from_list(set),
    BUILTIN_TYPE_IDS["frozenset"]: _from_list(frozenset),
    BUILTIN_TYPE_IDS["bytes"]: _bytes,
    # these parsers raise on anything but a str payload; walk_dict reports it as malformed
    BUILTIN_TYPE_IDS["datetime"]: _with_offset(datetime.datetime.fromisoformat),
    BUILTIN_TYPE_IDS["date"]: datetime.date.fromisoformat,
    BUILTIN_TYPE_IDS["time"]: _with_offset(datetime.time.fromisoformat),
    BUILTIN_TYPE_IDS["timedelta"]: _timedelta,
    BUILTIN_TYPE_IDS["uuid"]: uuid.UUID,
    BUILTIN_TYPE_IDS["decimal"]: _decimal,
}
