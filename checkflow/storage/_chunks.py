"""Content-defined chunking of large state parts, so a part that grows is not rewritten whole.

A part such as the pending requests grows by a little at each commit but is encoded whole
each time. The file log stores a part bigger than ``MIN_CHUNKED`` as a list of pieces whose
concatenation is exactly its bytes; the cuts fall where the content says (just before an
element boundary whose following bytes hash to a chosen value), so an unchanged stretch of
the part cuts into the same pieces as before and those are shared by hash. Only the pieces
around a change are new. The bytes are never parsed or re-encoded: joining is concatenation.
This module computes cut points only; it never reads or writes a log.
"""

from __future__ import annotations

import re
import zlib

__all__ = ["MIN_CHUNKED", "cut"]

MIN_CHUNKED = 8 * 1024
"""Parts up to this size are stored whole."""
_MIN_PIECE = 4 * 1024
_MAX_PIECE = 64 * 1024
_MASK = 7  # past the minimum, about one element boundary in 8 is a cut
_WINDOW = 24  # bytes after a boundary that decide whether it is a cut

# Where one element of a container ends and the next begins. JSON: a closing ``}``, ``]`` or
# ``"`` followed by ``,`` and an opening ``{``, ``[`` or ``"``. MessagePack: a fixmap or
# fixarray header (the start of most nested values); it may also match inside other data,
# which only makes a cut there possible, never wrong.
_BOUNDARIES = {
    "json": re.compile(rb'[}\]"],(?=["{\[])'),
    "msgpack": re.compile(rb"[\x80-\x9f]"),
}


def cut(data: bytes, format: str) -> list[bytes]:
    """``data`` as consecutive pieces (``b"".join(pieces) == data``), one piece if small."""
    if len(data) <= MIN_CHUNKED:
        return [data]
    finditer = _BOUNDARIES[format].finditer
    crc32 = zlib.crc32
    pieces: list[bytes] = []
    start, size = 0, len(data)
    while size - start > _MIN_PIECE:
        end = min(start + _MAX_PIECE, size)
        at = end
        for match in finditer(data, start + _MIN_PIECE, end):
            boundary = match.end()
            if not crc32(data[boundary : boundary + _WINDOW]) & _MASK:
                at = boundary
                break
        if at >= size:
            break
        pieces.append(data[start:at])
        start = at
    pieces.append(data[start:])
    return pieces
