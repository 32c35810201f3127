"""Content-defined chunking of large state parts, so a part that grows is not rewritten whole.

A part such as the pending requests grows by a little at each commit but is encoded whole
each time. The file log stores a part bigger than ``MIN_CHUNKED`` as a list of pieces whose
concatenation is exactly its bytes; the cuts fall where the content says (just before an
element boundary whose following bytes hash to a chosen value), so an unchanged stretch of
the part cuts into the same pieces as before and those are shared by hash. Only the pieces
around a change are new. The bytes are never parsed or re-encoded: joining is concatenation.

A part rewritten at every commit (state that changes each superstep) is mostly the bytes it
was last time, so the cut points of the few parts cut last are remembered: the cuts inside the
unchanged prefix are reused, the scan resumes from the last of them, and it stops as soon as
it lands on a remembered cut inside the unchanged suffix (from there on every decision is the
same, shifted). The pieces are exactly those of a full scan, at a fraction of its cost.
This module computes cut points only; it never reads or writes a log.
"""

from __future__ import annotations

import re
import threading
import zlib
from collections import deque

__all__ = ["MIN_CHUNKED", "cut"]

MIN_CHUNKED = 8 * 1024
"""Parts up to this size are stored whole."""
_MIN_PIECE = 1024
_MAX_PIECE = 64 * 1024
_MASK = 31  # about one element boundary in 32 is a cut
_WINDOW = 24  # bytes after a boundary that decide whether it is a cut

# Where one element of a container ends and the next begins. JSON: a closing ``}``, ``]`` or
# ``"`` followed by ``,`` and an opening ``{``, ``[`` or ``"``. MessagePack: a fixmap or
# fixarray header (the start of most nested values); it may also match inside other data,
# which only makes a cut there possible, never wrong.
_BOUNDARIES = {
    "json": re.compile(rb'[}\]"],(?=["{\[])'),
    "msgpack": re.compile(rb"[\x80-\x9f]"),
}


_REMEMBERED = 4  # parts whose cuts are kept for the next commit
# (format, bytes, piece ends, the ends that were content cuts rather than forced ones)
_Cuts = tuple[str, bytes, list[int], frozenset[int]]
_recent: deque[_Cuts] = deque(maxlen=_REMEMBERED)
_recent_lock = threading.Lock()


def cut(data: bytes, format: str) -> list[bytes]:
    """``data`` as consecutive pieces (``b"".join(pieces) == data``), one piece if small."""
    if len(data) <= MIN_CHUNKED:
        return [data]
    ends, regular = _cut_ends(data, format)
    with _recent_lock:
        _recent.append((format, data, ends, frozenset(regular)))
    pieces = []
    start = 0
    for end in ends:
        pieces.append(data[start:end])
        start = end
    return pieces


def _cut_ends(data: bytes, format: str) -> tuple[list[int], set[int]]:
    """The end of every piece (the last is ``len(data)``) and which were content cuts.

    Only a content cut is a point to resume from: what follows it depends on nothing before
    it, while a forced cut also depends on the boundary being looked at when it was forced.
    """
    with _recent_lock:
        candidates = [entry for entry in _recent if entry[0] == format]
    best: tuple[_Cuts, int] | None = None
    for entry in candidates:
        prefix = _common_prefix(data, entry[1])
        if best is None or prefix > best[1]:
            best = (entry, prefix)
    if best is None:
        return _scan(data, format, 0, [], set(), None)
    (_, old, old_ends, old_regular), prefix = best
    # Every cut whose boundary and window lie in the common prefix is the same here.
    same = [end for end in old_ends if end + _WINDOW <= prefix and end < len(old)]
    while same and same[-1] not in old_regular:
        same.pop()
    start = same[-1] if same else 0
    regular = {end for end in same if end in old_regular}
    suffix = _common_suffix(data, old, min(len(data), len(old)) - start)
    shift = len(data) - len(old)
    first = len(old) - suffix + 3  # the boundary bytes of a cut from here on are all shared
    tail = {end + shift: i for i, end in enumerate(old_ends)
            if end >= first and end in old_regular}
    shifted = [(end + shift, end in old_regular) for end in old_ends]
    return _scan(data, format, start, same, regular, (tail, shifted))


def _scan(
    data: bytes,
    format: str,
    start: int,
    ends: list[int],
    regular: set[int],
    resync: tuple[dict[int, int], list[tuple[int, bool]]] | None,
) -> tuple[list[int], set[int]]:
    """Cut ``data`` from the content cut at ``start`` (or 0) on, appending to ``ends``.

    With ``resync`` (shifted old content cuts -> their index; every old cut, shifted), the
    scan stops at its first content cut that is also an old one and copies the rest.
    """
    crc32 = zlib.crc32
    for match in _BOUNDARIES[format].finditer(data, start):
        at = match.end()
        while at - start > _MAX_PIECE:  # no cut for too long: force one
            start += _MAX_PIECE
            ends.append(start)
        if at - start >= _MIN_PIECE and not crc32(data[at : at + _WINDOW]) & _MASK:
            ends.append(at)
            regular.add(at)
            start = at
            if resync is not None and at in resync[0]:
                for end, is_regular in resync[1][resync[0][at] + 1 :]:
                    ends.append(end)
                    if is_regular:
                        regular.add(end)
                return ends, regular
    while len(data) - start > _MAX_PIECE:
        start += _MAX_PIECE
        ends.append(start)
    ends.append(len(data))
    return ends, regular


def _common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes ``a`` and ``b`` share (binary search over C comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:  # bytes slices: memcpy + memcmp (memoryview compares
            # element by element)
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """How many trailing bytes ``a`` and ``b`` share, at most ``limit``."""
    low, high = 0, max(0, limit)
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid : len(a) - low] == b[len(b) - mid : len(b) - low]:
            low = mid
        else:
            high = mid - 1
    return low
