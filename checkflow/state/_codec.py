"""The public codec: state values <-> bytes (JSON or MessagePack) and <-> msgspec-native data.

One model, two formats: ``to_builtins`` produces the tagged tree and msgspec writes it, so
``encode(v) == msgspec.json.encode(to_builtins(v))``. Encoders and decoders are module-level
msgspec instances, built once. This module must never decode with the inspection walker: a
load path that meets an unknown type id fails loudly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from checkflow.errors import StateEncodingError
from checkflow.state._decode import make_decoder
from checkflow.state._encode import encode_value
from checkflow.state._paths import WalkError
from checkflow.state._registry import TYPE_KEY

__all__ = [
    "Format",
    "decode",
    "encode",
    "from_builtins",
    "load_builtins",
    "to_builtins",
    "walk_owned",
]

Format = Literal["json", "msgpack"]

_ENCODERS: dict[str, msgspec.json.Encoder | msgspec.msgpack.Encoder] = {
    "json": msgspec.json.Encoder(),
    "msgpack": msgspec.msgpack.Encoder(),
}
_DECODERS: dict[str, msgspec.json.Decoder[Any] | msgspec.msgpack.Decoder[Any]] = {
    "json": msgspec.json.Decoder(),
    "msgpack": msgspec.msgpack.Decoder(),
}
_TAG_BYTES = TYPE_KEY.encode()  # absent from the bytes -> nothing to walk after decoding
_walk = make_decoder(None)


def to_builtins(value: Any, *, path: str = "") -> Any:
    """Convert ``value`` to the tagged, msgspec-native tree (a new tree; ``value`` is untouched).

    Raises ``UnregisteredStateTypeError`` or ``StateEncodingError`` naming where in ``value``
    (prefixed by ``path``) the offending item sits.
    """
    return walk_owned(value, path, encode_value)


def from_builtins(obj: Any, *, path: str = "") -> Any:
    """Inverse of ``to_builtins``: rebuild the original values from the tagged tree.

    ``obj`` is not modified (it is copied through MessagePack first, which is cheap).
    """
    try:
        copy = _DECODERS["msgpack"].decode(_encoder("msgpack").encode(obj))
    except (msgspec.EncodeError, OverflowError, TypeError) as exc:
        raise StateEncodingError(
            f"not a to_builtins() tree at {path or '<root>'}: {exc}", path=path
        ) from exc
    return walk_owned(copy, path)


def encode(value: Any, *, format: Format = "json", path: str = "") -> bytes:
    """Encode a state value to bytes in ``format`` ("json" or "msgpack")."""
    return _encoder(format).encode(to_builtins(value, path=path))


def decode(data: bytes, *, format: Format = "json", path: str = "") -> Any:
    """Decode bytes written by ``encode`` back to equal values of the same types.

    Unknown type ids raise ``UnregisteredStateTypeError``; bytes that are not valid
    ``format`` data or not a valid tagged tree raise ``StateEncodingError``.
    """
    data = bytes(data) if type(data) is not bytes else data
    tree = load_builtins(data, format=format, path=path)
    if _TAG_BYTES in data or (format == "json" and b"\\u" in data):  # "\u0024type" is "$type"
        return walk_owned(tree, path)
    return tree


def load_builtins(data: bytes, *, format: Format, path: str = "") -> Any:
    """Parse bytes into the still-tagged tree (shared with inspection decoding)."""
    decoder = _DECODERS.get(format)
    if decoder is None:
        raise ValueError(f"unknown state format {format!r}; expected 'json' or 'msgpack'")
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as exc:
        where = path or "<root>"
        raise StateEncodingError(
            f"cannot decode {format} state at {where}: {exc}", path=path
        ) from exc


def walk_owned(tree: Any, path: str, walk: Callable[[Any], Any] = _walk) -> Any:
    """Run a walker (decode: over a tree nobody else holds), raising only public errors."""
    try:
        return walk(tree)
    except WalkError as error:
        raise error.public(path) from error.__cause__
    except RecursionError as exc:
        raise StateEncodingError(
            f"state nested too deeply or containing itself at {path or '<root>'}", path=path
        ) from exc


def _encoder(format: str) -> msgspec.json.Encoder | msgspec.msgpack.Encoder:
    encoder = _ENCODERS.get(format)
    if encoder is None:
        raise ValueError(f"unknown state format {format!r}; expected 'json' or 'msgpack'")
    return encoder
