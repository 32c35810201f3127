"""The typed layout: a value's msgspec-native bytes plus a small schema of its exact types.

JSON and MessagePack cannot tell a tuple from a list or a datetime from a str, so the tagged
layout (``_encode``/``_decode``) wraps every such value in a tag, which costs a Python walk
over the whole value in both directions. Most state, though, is regular: lists of records
of the same shape. For such a value this module infers a *schema* (a few hundred bytes saying
"a list of mappings whose ``created`` is a datetime and whose ``span`` is a tuple") column by
column, with ``map``/``zip``/``set`` doing the per-item work in C; msgspec then writes the value
as it is and, on the way back, decodes it straight into the exact types from a msgspec type
built from the schema (and cached). The bytes are::

    {"$type": "checkflow.typed", "$value": [len(schema), schema, value]}

(the schema's length lets the decoder cut out the schema and the value without parsing).

A value the schema cannot express exactly (a registered type, a set, an int beyond 64 bits, a
non-finite float, a non-str key, a subclass of a builtin, an offset the format would round, a
mix of kinds in one list) is *unfit*: the caller falls back to the tagged layout, which also
raises every error with its path. This module must never guess: when in doubt it is unfit.

Schema nodes: ``"s"`` a plain scalar (None, bool, int, finite float, str), ``"n"`` None;
leaves ``"dt" "d" "tm" "td" "u" "dec" "b"`` (datetime, date, time, timedelta, UUID, Decimal,
bytes); ``["l", n]`` list, ``["t", n]`` tuple of like items, ``["T", [n, ...]]`` tuple by
position, ``["D", {key: n}]`` mapping (every key listed, any may be absent), ``["M", n]``
mapping of like values, ``["|", [n, ...]]`` one of several kinds.
"""

from __future__ import annotations

import datetime
import decimal
import math
import typing
import uuid
from collections.abc import Callable, Sequence
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Annotated, Any

import msgspec

from checkflow.state._depth import nesting_depth_exceeds
from checkflow.state._registry import TYPE_KEY, TYPED_LAYOUT_ID, VALUE_KEY

__all__ = ["BadSchema", "decode_typed", "encode_typed", "is_typed"]

Node = Any  # str | list: see the module docstring


class Unfit(Exception):
    """The value needs the tagged layout."""


class BadSchema(Exception):
    """Bytes in the typed layout whose schema this codec cannot have written."""


_NONE = type(None)
_SCALARS = frozenset({str, bool, int, float, _NONE})
_LEAVES: dict[type[Any], str] = {
    datetime.datetime: "dt",
    datetime.date: "d",
    datetime.time: "tm",
    datetime.timedelta: "td",
    uuid.UUID: "u",
    decimal.Decimal: "dec",
    bytes: "b",
}
_UTC = datetime.UTC
_tzinfo = attrgetter("tzinfo")
_TAG = TYPE_KEY.encode()
_BARE_MSGPACK = 4096  # plain MessagePack below this size is written bare (see encode_typed)
_MANY_KEYS = 16  # a mapping with more keys than this, all alike, is described as ["M", n]
# what msgspec raises for values it cannot write; the tagged layout then raises its own,
# path-naming error
_UNWRITABLE = (msgspec.EncodeError, OverflowError, TypeError, ValueError, UnicodeError)


# -- encoding: infer the schema, then let msgspec write the value as it is ------------------


def encode_typed(
    value: Any, encoder: msgspec.json.Encoder | msgspec.msgpack.Encoder, fmt: str, limit: int
) -> bytes | None:
    """The value in the typed layout (or, when plain, as plain bytes); None when unfit.

    A plain value (JSON's own types only) that holds no tag key is written bare: that is also
    valid tagged-layout bytes, so older readers and ``decode``'s plain path read it. Plain
    MessagePack of ``_BARE_MSGPACK`` bytes or more still gets the envelope: its schema lets
    the decoder refuse, in C, what the encoder could never have written, where bare bytes
    are checked by a Python walk.
    """
    size = _triage(value, limit)
    if size is not _LARGE:
        if size is _OTHER:
            return None  # small: the tagged walk is cheaper than inferring a schema
        try:
            data = encoder.encode(value)
        except _UNWRITABLE:
            return None
        return None if _TAG in data else data  # a tag key: the tagged layout escapes it
    try:
        node = _infer((value,), fmt, -limit)  # depth counts up to 0: past it, unfit
    except (Unfit, RecursionError):
        return None
    if schema_levels(node) > limit:
        return None  # the tagged layout gives the exact verdict on the nesting limit
    try:
        if _plain(node):
            data = encoder.encode(value)
            if _TAG not in data and (fmt == "json" or len(data) < _BARE_MSGPACK):
                return data
        schema = encoder.encode(node)
        return encoder.encode(
            {TYPE_KEY: TYPED_LAYOUT_ID, VALUE_KEY: [len(schema), msgspec.Raw(schema), value]})
    except _UNWRITABLE:
        return None


_PLAIN, _OTHER, _LARGE = "plain", "other", "large"
_SMALL = 64  # items: a value with fewer takes the tagged layout unless it is plain


def _triage(value: Any, limit: int) -> str:
    """Whether ``value`` is small and plain, small and not plain, or large (``_SMALL`` items or
    more), seen at the cost of one type check per item: small values skip the inference,
    whose fixed cost is larger than the whole tagged walk of a few items."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return _PLAIN
    if t is float:
        return _PLAIN if value - value == 0.0 else _OTHER  # false for nan and +-inf
    if t is not dict and t is not list:
        return _OTHER
    budget = _SMALL
    plain = True
    stack = [_children(value)]
    while stack:
        for item in stack[-1]:
            budget -= 1
            if budget < 0:
                return _LARGE
            t = type(item)
            if t is str or t is int or t is bool or item is None:
                continue
            if t is float and item - item == 0.0:
                continue
            if (t is dict or t is list) and len(stack) < limit:
                children = _children(item)
                if children is not None:
                    stack.append(children)
                    break
            plain = False
        else:
            stack.pop()
    return _PLAIN if plain and limit >= 1 else _OTHER


def _children(container: Any) -> Any:
    """An iterator over a list's items or a str-keyed dict's values; None for other keys."""
    if type(container) is list:
        return iter(container)
    for key in container:
        if type(key) is not str:
            return None
    return iter(container.values())


def _infer(
    items: Sequence[Any], fmt: str, depth: int, types: set[type[Any]] | None = None
) -> Node:
    """The one node that describes every item of ``items`` (of ``types``), or ``Unfit``."""
    if types is None:
        types = set(map(type, items))
    if types <= _SCALARS:
        _check_numbers(items, types)
        return "s"
    if depth > 0:
        raise Unfit
    if len(types) == 1:
        return _uniform(next(iter(types)), items, fmt, depth)
    return _mixed(types, items, fmt, depth)


def _check_numbers(items: Sequence[Any], types: set[type[Any]]) -> None:
    """Refuse non-finite floats. Ints need no check: JSON keeps any int exactly, and
    msgspec refuses a MessagePack int beyond 64 bits (the tagged layout then takes it)."""
    if float in types:
        floats = items if len(types) == 1 else [x for x in items if type(x) is float]
        # a finite sum proves every term finite (nan and inf propagate); only an overflowing
        # sum of finite floats needs the item-by-item check
        if not math.isfinite(sum(floats)) and not all(map(math.isfinite, floats)):
            raise Unfit


def _uniform(t: type[Any], items: Sequence[Any], fmt: str, depth: int) -> Node:
    if t is dict:
        return _mappings(items, fmt, depth)
    if t is list:
        return ["l", _infer(list(chain.from_iterable(items)), fmt, depth + 1)]
    if t is tuple:
        return _tuples(items, fmt, depth)
    leaf = _LEAVES.get(t)
    if leaf is None:
        raise Unfit  # a registered type, a set, a subclass of a builtin, ...
    if t is datetime.datetime:
        _check_zones(items, fmt)
    elif (t is datetime.time and set(map(_tzinfo, items)) != {None}) or (
        t is decimal.Decimal and not all(map(decimal.Decimal.is_finite, items))
    ):
        raise Unfit  # aware times and non-finite decimals keep the tagged layout
    return leaf


def _check_zones(items: Sequence[datetime.datetime], fmt: str) -> None:
    """Datetimes round-trip exactly when naive or UTC; JSON also keeps whole-minute offsets
    (MessagePack writes aware datetimes as UTC timestamps, which would lose the offset)."""
    zones = set(map(_tzinfo, items))
    zones.discard(None)
    zones.discard(_UTC)
    if not zones:
        return
    if fmt != "json":
        raise Unfit
    for item in items:
        offset = item.utcoffset()
        if offset is not None and (offset.seconds % 60 or offset.microseconds):
            raise Unfit


def _tuples(items: Sequence[tuple[Any, ...]], fmt: str, depth: int) -> Node:
    flat = list(chain.from_iterable(items))
    types = set(map(type, flat))
    if _describable(types):
        return ["t", _infer(flat, fmt, depth + 1, types)]
    lengths = set(map(len, items))
    if len(lengths) != 1:
        raise Unfit
    return ["T", [_infer(column, fmt, depth + 1) for column in zip(*items, strict=True)]]


def _describable(types: set[type[Any]]) -> bool:
    """Whether one node can describe items of these types (see ``_mixed``)."""
    if len(types) <= 1 or types <= _SCALARS:
        return True
    rest = types - _SCALARS
    return rest <= {dict, list} or (types - rest <= {_NONE} and len(rest) == 1)


def _mixed(types: set[type[Any]], items: Sequence[Any], fmt: str, depth: int) -> Node:
    """A union node. msgspec tells union members apart by their encoded kind, so only these
    mixes are exact: scalars with at most one mapping node and one list node, or None with
    any one other kind."""
    if not _describable(types):
        raise Unfit
    rest = types - _SCALARS
    scalars = types & _SCALARS
    parts: list[Node] = []
    if scalars == {_NONE}:
        parts.append("n")
    else:
        values = [x for x in items if type(x) in _SCALARS]
        _check_numbers(values, scalars)
        parts.append("s")
    for t in sorted(rest, key=attrgetter("__name__")):
        parts.append(_uniform(t, [x for x in items if type(x) is t], fmt, depth))
    return ["|", parts]


def _mappings(items: Sequence[dict[Any, Any]], fmt: str, depth: int) -> Node:
    """One ``["D", ...]`` (or ``["M", ...]``) node for many mappings, column by column."""
    by_name = _columns(items)
    columns: list[Sequence[Any]]
    if by_name is None:
        keys = set().union(*items)
        if set(map(type, keys)) - {str}:
            raise Unfit  # the tagged layout names the offending key
        names = sorted(keys)
        columns = [[d[k] for d in items if k in d] for k in names]
    else:
        names = sorted(by_name)
        columns = [by_name[name] for name in names]
    if not names:
        return ["D", {}]
    fields = {name: _infer(column, fmt, depth + 1) for name, column in zip(names, columns,
                                                                          strict=True)}
    ascii_names = all(map(str.isascii, names))
    if len(fields) > _MANY_KEYS or not ascii_names:
        first = fields[names[0]]
        if all(node == first for node in fields.values()):
            return ["M", first]
    if not ascii_names:
        # msgspec 0.23 misses some non-ASCII field names of a TypedDict (seen in a fuzz run:
        # about 1 in 30 key sets lost a key), so such mappings are described only as ["M", n]
        raise Unfit
    return ["D", fields]


def _columns(items: Sequence[dict[Any, Any]]) -> dict[str, Sequence[Any]] | None:
    """Each key's values when every mapping has exactly the first one's str keys (the usual
    case: records of one shape), found in C; None otherwise."""
    first = items[0]
    if set(map(type, first)) - {str}:
        raise Unfit
    names = list(first)
    if len(names) < 2:
        return None
    try:
        rows = list(map(itemgetter(*names), items))
    except KeyError:
        return None
    if sum(map(len, items)) != len(names) * len(items):  # every one has them all: no more
        return None
    return dict(zip(names, zip(*rows, strict=True), strict=True))


def _plain(node: Node) -> bool:
    """Whether values of ``node`` decode exactly without a schema (JSON's own types only)."""
    if type(node) is str:
        return node in ("s", "n")
    kind, arg = node
    if kind in ("l", "M"):
        return _plain(arg)
    if kind == "D":
        return all(map(_plain, arg.values()))
    if kind == "|":
        return all(map(_plain, arg))
    return False


def schema_levels(node: Node) -> int:
    """How deep the tagged layout would nest values of ``node`` (a tag counts one level).

    Both directions check this number against the nesting limit, so the typed layout accepts
    a value exactly when it can read it back.
    """
    if type(node) is str:
        return 0 if node in ("s", "n") else 1
    kind, arg = node
    if kind in ("l", "M"):
        return 1 + schema_levels(arg)
    if kind == "t":
        return 2 + schema_levels(arg)
    if kind == "T":
        return 2 + max(map(schema_levels, arg), default=0)
    if kind == "D":
        escape = 1 if TYPE_KEY in arg else 0
        return 1 + escape + max(map(schema_levels, arg.values()), default=0)
    return max(map(schema_levels, arg), default=0)  # "|"


# -- decoding: build (once) the msgspec type the schema names, and decode into it -----------

_FLOAT_MAX = 1.7976931348623157e308
_Finite = Annotated[float, msgspec.Meta(ge=-_FLOAT_MAX, le=_FLOAT_MAX)]
_SCALAR: Any = typing.Union[None, bool, int, _Finite, str]  # noqa: UP007 (a runtime value)
_LEAF_TYPES: dict[str, Any] = {"s": _SCALAR, "n": None} | {
    name: cls for cls, name in _LEAVES.items()
}


def _prefix(encoder: msgspec.json.Encoder | msgspec.msgpack.Encoder, null: bytes) -> bytes:
    whole = encoder.encode({TYPE_KEY: TYPED_LAYOUT_ID, VALUE_KEY: None})
    return whole[: whole.rindex(null)]


_JSON = msgspec.json.Encoder()
_MSGPACK = msgspec.msgpack.Encoder()
_PREFIXES = {"json": _prefix(_JSON, b"null"), "msgpack": _prefix(_MSGPACK, b"\xc0")}
_SCHEMAS: dict[str, Callable[[Any], Any]] = {
    "json": msgspec.json.Decoder().decode,
    "msgpack": msgspec.msgpack.Decoder().decode,
}
_decoders: dict[tuple[str, bytes], tuple[Callable[[Any], Any], int]] = {}
_CACHE_SIZE = 512


def is_typed(data: bytes, fmt: str) -> bool:
    """Whether ``data`` is in the typed layout (it starts with the envelope's fixed bytes)."""
    prefix = _PREFIXES.get(fmt)
    return prefix is not None and data.startswith(prefix)


def decode_typed(data: bytes, fmt: str, limit: int) -> Any:
    """Decode typed-layout bytes; raises ``BadSchema``, ``msgspec.DecodeError`` or
    ``msgspec.ValidationError`` (naming the path), or ``RecursionError`` past ``limit``."""
    found = _split(data, fmt)
    if found is None:
        raise BadSchema("a typed envelope this codec never writes (the schema's length, the "
                        "schema and the value, in that order and nothing else)")
    schema, body = found
    cached = _decoders.get((fmt, schema))
    if cached is None:
        cached = _decoder(fmt, schema, limit)
    decode, levels = cached
    if levels > limit:
        raise RecursionError(levels)
    return decode(body)


def _split(data: bytes, fmt: str) -> tuple[bytes, memoryview] | None:
    """The schema and the body of typed bytes as ``encode_typed`` writes them, found without
    parsing the body: the envelope says how long the schema is. None if not so written."""
    at = len(_PREFIXES[fmt])
    if fmt == "json":
        if data[at : at + 1] != b"[":
            return None
        at += 1
        comma = data.find(b",", at, at + 12)
        digits = data[at:comma]
        if comma < 0 or not digits.isdigit() or data[-2:] != b"]}":
            return None
        start = comma + 1
        end = start + int(digits)
        if data[end : end + 1] != b",":
            return None
        return data[start:end], memoryview(data)[end + 1 : -2]
    # MessagePack: a three-item array: the schema's length, the schema, the body
    if data[at : at + 1] == b"\x93" and len(data) > at + 1:
        marker = data[at + 1]
        if marker < 0x80:  # a positive fixint
            start, size = at + 2, marker
        elif marker in _MSGPACK_UINTS:
            width = _MSGPACK_UINTS[marker]
            start, size = at + 2 + width, int.from_bytes(data[at + 2 : at + 2 + width], "big")
        else:
            return None
        end = start + size
        if end <= len(data):
            return data[start:end], memoryview(data)[end:]
    return None


_MSGPACK_UINTS = {0xCC: 1, 0xCD: 2, 0xCE: 4}


def _decoder(fmt: str, schema: bytes, limit: int) -> tuple[Callable[[Any], Any], int]:
    node = _SCHEMAS[fmt](schema)
    if nesting_depth_exceeds(node, 2 * limit + 2):  # bounds the build's recursion below
        raise RecursionError(limit)
    try:
        target = _build(node)  # validates the schema: then its levels can be counted
        levels = schema_levels(node)
        decoder = (msgspec.json.Decoder(target) if fmt == "json"
                   else msgspec.msgpack.Decoder(target))
    except (TypeError, ValueError, KeyError) as exc:
        raise BadSchema(f"a schema this codec never writes ({exc})") from exc
    if len(_decoders) >= _CACHE_SIZE:
        _decoders.clear()
    _decoders[(fmt, schema)] = decoder.decode, levels
    return decoder.decode, levels


def _build(node: Node) -> Any:
    if type(node) is str:
        return _LEAF_TYPES[node]
    if type(node) is not list or len(node) != 2:
        raise ValueError(f"malformed node {node!r:.60}")
    kind, arg = node
    if kind == "l":
        return list[_build(arg)]  # type: ignore[misc]
    if kind == "t":
        return tuple[_build(arg), ...]  # type: ignore[misc]
    if kind == "T":
        return tuple.__class_getitem__(tuple(map(_build, _expect(arg, list))) or ((),))
    if kind == "M":
        return dict[str, _build(arg)]  # type: ignore[misc]
    if kind == "D":
        fields = {name: _build(sub) for name, sub in _expect(arg, dict).items()}
        return typing.TypedDict("Fields", fields, total=False)  # type: ignore[operator]
    if kind == "|":
        return typing.Union[tuple(map(_build, _expect(arg, list)))]  # noqa: UP007
    raise ValueError(f"unknown node kind {kind!r:.40}")


def _expect(value: Any, kind: type[Any]) -> Any:
    if type(value) is not kind:
        raise TypeError(f"expected a {kind.__name__} in the schema, got {type(value).__name__}")
    return value
