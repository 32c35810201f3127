"""The public codec: state values <-> bytes (JSON or MessagePack) and <-> msgspec-native data.

One model, two formats, two layouts: ``to_builtins`` produces the tagged tree and msgspec
writes it (``encode(v, layout="tagged") == msgspec.json.encode(to_builtins(v))``); the typed
layout (``_typed``), written when the value fits it, is the value as msgspec writes it plus a
schema of its exact types. ``decode`` reads both. Encoders and decoders are module-level
msgspec instances, built once. This module must never decode with the inspection walker: a
load path that meets an unknown type id fails loudly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from checkflow.errors import StateEncodingError, StateNestingError
from checkflow.state import _depth
from checkflow.state._decode import make_decoder
from checkflow.state._encode import _INT_MAX, _INT_MIN, encode_value
from checkflow.state._paths import TooDeepError, WalkError
from checkflow.state._registry import TYPE_KEY
from checkflow.state._typed import BadSchema, decode_typed, encode_typed, is_typed

__all__ = [
    "Format",
    "Layout",
    "decode",
    "encode",
    "from_builtins",
    "load_builtins",
    "to_builtins",
    "walk_owned",
]

Format = Literal["json", "msgpack"]
Layout = Literal["auto", "tagged"]

_ENCODERS: dict[str, msgspec.json.Encoder | msgspec.msgpack.Encoder] = {
    "json": msgspec.json.Encoder(),
    "msgpack": msgspec.msgpack.Encoder(),
}
_DECODERS: dict[str, msgspec.json.Decoder[Any] | msgspec.msgpack.Decoder[Any]] = {
    "json": msgspec.json.Decoder(),
    "msgpack": msgspec.msgpack.Decoder(),
}
_BARE = frozenset({str, bool, type(None)})  # a lone one is its own bytes in both layouts
_TAG_BYTES = TYPE_KEY.encode()  # absent from the bytes -> nothing to walk after decoding
_walk = make_decoder(None)


def to_builtins(value: Any, *, path: str = "") -> Any:
    """Convert ``value`` to the tagged, msgspec-native tree (a new tree; ``value`` is untouched).

    Raises ``UnregisteredStateTypeError`` or ``StateEncodingError`` naming where in ``value``
    (prefixed by ``path``) the offending item sits.
    """
    return _to_tree(value, path, _depth.max_nesting_depth())


def _to_tree(value: Any, path: str, limit: int) -> Any:
    """The encode walk, refusing (``StateNestingError``) a tree nested past ``limit``."""
    try:
        return encode_value(value, limit)
    except WalkError as error:
        raise error.public(path) from error.__cause__
    except (TooDeepError, RecursionError) as exc:
        raise _too_deep(path, limit) from exc


def from_builtins(obj: Any, *, path: str = "") -> Any:
    """Inverse of ``to_builtins``: rebuild the original values from the tagged tree.

    ``obj`` is not modified (it is copied through MessagePack first, which is cheap).
    """
    try:
        data = _encoder("msgpack").encode(obj)
        copy = _DECODERS["msgpack"].decode(data)
    except RecursionError as exc:
        raise _too_deep(path, _depth.max_nesting_depth()) from exc
    except (msgspec.EncodeError, OverflowError, TypeError) as exc:
        raise StateEncodingError(
            f"not a to_builtins() tree at {path or '<root>'}: {exc}", path=path
        ) from exc
    _check_depth(data, "msgpack", copy, path, None)
    return walk_owned(copy, path, encoding=True)


def encode(
    value: Any,
    *,
    format: Format = "json",
    path: str = "",
    max_depth: int | None = None,
    layout: Layout = "auto",
) -> bytes:
    """Encode a state value to bytes in ``format`` ("json" or "msgpack").

    ``layout="auto"`` writes the typed layout when the value fits it (see ``_typed``: the
    value as msgspec writes it, plus a schema of its exact types) and the tagged layout
    otherwise; ``"tagged"`` always writes the tagged layout, whose bytes can be spliced into
    other tagged bytes. ``decode`` reads both. A value nested deeper than ``max_depth``
    (default: ``max_nesting_depth()``) or containing itself raises ``StateNestingError``,
    never ``RecursionError``.
    """
    encoder = _encoder(format)
    if (layout == "auto" or layout == "tagged") and _bare(value):
        return encoder.encode(value)  # what both layouts write for it
    limit = _limit(max_depth)
    if layout == "auto":
        data = encode_typed(value, encoder, format, limit)
        if data is not None:
            return data
    elif layout != "tagged":
        raise ValueError(f"unknown state layout {layout!r}; expected 'auto' or 'tagged'")
    tree = _to_tree(value, path, limit)  # the walk enforces the limit: nothing to check after
    try:
        return encoder.encode(tree)
    except RecursionError as exc:
        raise _too_deep(path, limit) from exc


def _bare(value: Any) -> bool:
    """A lone scalar the walk keeps as it is, or an empty dict or list."""
    t = type(value)
    if t is int:
        return bool(_INT_MIN <= value <= _INT_MAX)
    return t in _BARE or ((t is dict or t is list) and not value)


def decode(
    data: bytes, *, format: Format = "json", path: str = "", max_depth: int | None = None
) -> Any:
    """Decode bytes written by ``encode`` back to equal values of the same types.

    Unknown type ids raise ``UnregisteredStateTypeError``; bytes that are not valid
    ``format`` data, not a valid tagged tree, or that ``encode`` could not have written
    (MessagePack extension types, non-str keys, non-finite floats) raise
    ``StateEncodingError``; nesting deeper than ``max_depth`` raises ``StateNestingError``.
    """
    data = bytes(data) if type(data) is not bytes else data
    if is_typed(data, format):
        return _decode_typed(data, format, path, _limit(max_depth))
    tagged = _TAG_BYTES in data or (format == "json" and b"\\u" in data)  # "\u0024type" is "$type"
    # Tagged bytes are walked anyway, and the walk checks the depth as it goes.
    tree = load_builtins(data, format=format, path=path, max_depth=max_depth,
                         check_depth=not tagged)
    if tagged:
        return walk_owned(tree, path, limit=_limit(max_depth))
    return tree


def _decode_typed(data: bytes, format: str, path: str, limit: int) -> Any:
    where = path or "<root>"
    try:
        return decode_typed(data, format, limit)
    except RecursionError as exc:
        raise _too_deep(path, limit, encoding=False) from exc
    except (msgspec.DecodeError, msgspec.ValidationError, BadSchema) as exc:
        raise StateEncodingError(
            f"cannot decode {format} state at {where}: {exc}", path=path
        ) from exc


def load_builtins(
    data: bytes,
    *,
    format: Format,
    path: str = "",
    max_depth: int | None = None,
    check_depth: bool = True,
) -> Any:
    """Parse bytes into the still-tagged tree (shared with inspection decoding).

    Refuses what ``encode`` cannot produce and nesting past the limit, never recursing deeper.
    ``check_depth=False`` leaves a JSON tree's depth to the caller's walker (``walk_owned``).
    """
    decoder = _DECODERS.get(format)
    if decoder is None:
        raise ValueError(f"unknown state format {format!r}; expected 'json' or 'msgpack'")
    where = path or "<root>"
    limit = _limit(max_depth)
    try:
        tree = decoder.decode(data)
    except RecursionError as exc:
        raise _too_deep(path, limit, encoding=False) from exc
    except msgspec.DecodeError as exc:
        raise StateEncodingError(
            f"cannot decode {format} state at {where}: {exc}", path=path
        ) from exc
    if format == "msgpack":
        problem = _depth.check_msgpack_tree(tree, limit)
        if problem is not None:
            error = StateNestingError if problem.startswith("nested") else StateEncodingError
            raise error(f"cannot decode msgpack state at {where}: {problem}", path=path)
    elif check_depth:
        _check_depth(data, format, tree, path, limit, encoding=False)
    return tree


def walk_owned(
    tree: Any,
    path: str,
    walk: Callable[[Any, int], Any] = _walk,
    *,
    limit: int | None = None,
    encoding: bool = False,
) -> Any:
    """Run a decode walker over a tree nobody else holds, raising only public errors.

    The walk refuses nesting past ``limit`` (default: the process-wide limit).
    """
    limit = _limit(limit)
    try:
        return walk(tree, limit)
    except WalkError as error:
        raise error.public(path) from error.__cause__
    except (TooDeepError, RecursionError) as exc:
        raise _too_deep(path, limit, encoding=encoding) from exc


def _limit(max_depth: int | None) -> int:
    return _depth.max_nesting_depth() if max_depth is None else max_depth


def _check_depth(
    data: bytes,
    format: str,
    tree: Any,
    path: str,
    max_depth: int | None,
    *,
    encoding: bool = True,
) -> None:
    """Refuse ``tree`` (parsed from or encoded as ``data``) when it nests past the limit."""
    limit = _limit(max_depth)
    if _depth.marker_bound(data, format) > limit and _depth.nesting_depth_exceeds(tree, limit):
        raise _too_deep(path, limit, encoding=encoding)


def _too_deep(path: str, limit: int, *, encoding: bool = True) -> StateNestingError:
    cyclic = ", or containing itself," if encoding else ""
    return StateNestingError(
        f"state nested deeper than {limit} levels{cyclic} at {path or '<root>'}",
        path=path,
        limit=limit,
    )


def _encoder(format: str) -> msgspec.json.Encoder | msgspec.msgpack.Encoder:
    encoder = _ENCODERS.get(format)
    if encoder is None:
        raise ValueError(f"unknown state format {format!r}; expected 'json' or 'msgpack'")
    return encoder
