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
from collections.abc import Iterator

__all__ = ["MIN_CHUNKED", "cut", "cut_ends", "recut"]

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
    ends = cut_ends(data, format)
    return [data[start:end] for start, end in zip([0, *ends], ends, strict=False)]


def cut_ends(data: bytes, format: str) -> list[int]:
    """Where the pieces ``cut`` gives end, the last at ``len(data)``."""
    return list(_iter_ends(data, format, 0))


def recut(
    data: bytes, format: str, previous: bytes, previous_ends: list[int]
) -> tuple[list[int], int, int]:
    """The piece ends ``cut`` would give ``data``, found by reusing the cuts of ``previous``
    (whose piece ends are ``previous_ends``) wherever the two agree byte for byte.

    Returns the ends and how many leading and trailing pieces are ``previous``'s own. A cut
    depends only on the bytes from its piece's start to ``_WINDOW`` past it, so cuts that lie
    wholly inside the common prefix are kept, and once a new piece starts inside the common
    suffix exactly where a previous one started (shifted), every later cut is the previous one
    shifted too. A part rewritten with one element changed costs a few pieces, not the whole.
    """
    size = len(data)
    if size <= MIN_CHUNKED or len(previous) <= MIN_CHUNKED:
        return cut_ends(data, format), 0, 0
    prefix = _common_prefix(data, previous)
    kept = 0
    while kept < len(previous_ends) - 1 and previous_ends[kept] + _WINDOW <= prefix:
        kept += 1
    start = previous_ends[kept - 1] if kept else 0
    suffix = _common_suffix(data, previous)
    shift = size - len(previous)
    previous_starts = {end + shift: n for n, end in enumerate(previous_ends[:-1], start=1)}
    ends = previous_ends[:kept]
    for end in _iter_ends(data, format, start):
        if end >= size:
            ends.append(end)
            break
        ends.append(end)
        n = previous_starts.get(end)
        if n is not None and end >= size - suffix:  # in step again: the rest is as before
            tail = [e + shift for e in previous_ends[n:]]
            return ends + tail, kept, len(tail)
    return ends, kept, 0


def _iter_ends(data: bytes, format: str, start: int) -> Iterator[int]:
    """Where the pieces of ``data`` from ``start`` (a cut, or 0) end, the last at its end,
    one at a time, so that ``recut`` can stop once it is in step."""
    size = len(data)
    if size <= MIN_CHUNKED:
        yield size
        return
    finditer = _BOUNDARIES[format].finditer
    crc32 = zlib.crc32
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
        yield at
        start = at
    yield size


def _common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix, by bisection on C-speed comparisons."""
    low, high = 0, min(len(a), len(b))
    view = memoryview(b)
    while low < high:
        mid = (low + high + 1) // 2
        if a.startswith(view[low:mid], low):
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: bytes, b: bytes) -> int:
    """The length of the longest common suffix (see ``_common_prefix``)."""
    low, high = 0, min(len(a), len(b))
    view = memoryview(b)
    la, lb = len(a), len(b)
    while low < high:
        mid = (low + high + 1) // 2
        if a.endswith(view[lb - mid : lb - low], 0, la - low):
            low = mid
        else:
            high = mid - 1
    return low
