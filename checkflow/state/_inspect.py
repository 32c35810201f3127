"""Inspection-only decoding: show any state, even one holding types this process lacks.

Tools that display state (the CLI, the HTTP snapshot view, exports) decode with
``decode_for_inspection``: an unknown tagged value becomes an ``OpaqueValue`` instead of an
error. This module must never be used on a path that loads state to run it: a placeholder
there would silently change what the workflow sees.
"""

from __future__ import annotations

from typing import Any

import msgspec

from checkflow.state._codec import Format, decode, load_builtins, walk_owned
from checkflow.state._decode import make_decoder
from checkflow.state._typed import is_typed

__all__ = ["OpaqueValue", "decode_for_inspection"]


class OpaqueValue(msgspec.Struct, frozen=True):
    """A tagged value whose type id is not registered here: the id and its decoded payload."""

    type_id: str
    value: Any


_walk = make_decoder(OpaqueValue)


def decode_for_inspection(data: bytes, *, format: Format = "json") -> Any:
    """Decode like ``decode`` but keep unknown type ids as ``OpaqueValue`` placeholders.

    For display only; never use it to load state that will run. Bytes in the typed layout
    hold no registered types (those always take the tagged layout), so they decode exactly.
    """
    data = bytes(data)
    if is_typed(data, format):
        return decode(data, format=format)
    return walk_owned(load_builtins(data, format=format), "", _walk)
