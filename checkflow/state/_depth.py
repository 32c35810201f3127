"""The codec's nesting limit, and the checks that enforce it without recursion.

msgspec and the codec walkers recurse once per nested container, so a value nested a few
hundred levels deep would raise ``RecursionError`` somewhere unpredictable (and depend on how
deep the caller's stack already is). Every encode and decode is checked against one limit
instead, so deep values fail the same way everywhere, with ``StateNestingError``. The checks
are cheap on the common path: the number of container markers in the encoded bytes (counted
in C) bounds the depth, and only bytes with more markers than the limit are walked, by an
iterative walk. This module must never recurse over a value.
"""

from __future__ import annotations

import math
import threading
from typing import Any

__all__ = [
    "DEFAULT_MAX_NESTING_DEPTH",
    "check_msgpack_tree",
    "marker_bound",
    "max_nesting_depth",
    "nesting_depth_exceeds",
    "set_max_nesting_depth",
]

DEFAULT_MAX_NESTING_DEPTH = 200
"""Containers one encoded state value may nest (a tagged value counts one level).

Deep enough for real state (an HTTP body limited to 64 levels fits, inside a session and a
snapshot, with room to spare) and far below where Python's recursion limit would strike.
"""

_limit = DEFAULT_MAX_NESTING_DEPTH
_limit_lock = threading.Lock()
_CONTAINERS = frozenset({dict, list, tuple, set, frozenset})

# Bytes that can open a container: JSON ``[`` and ``{``; MessagePack fixmap, fixarray,
# array16/32 and map16/32 headers. Deleting every other byte counts them at C speed.
_OPENERS = {
    "json": b"[{",
    "msgpack": bytes(range(0x80, 0xA0)) + bytes((0xDC, 0xDD, 0xDE, 0xDF)),
}
_DELETE_ALL_BUT = {
    fmt: bytes(b for b in range(256) if b not in openers) for fmt, openers in _OPENERS.items()
}


def max_nesting_depth() -> int:
    """The process-wide nesting limit ``encode``/``decode`` apply when given no ``max_depth``."""
    return _limit


def set_max_nesting_depth(limit: int) -> int:
    """Set the process-wide nesting limit (default ``DEFAULT_MAX_NESTING_DEPTH``); the old one.

    Values above roughly 900 are pointless: Python's recursion limit then refuses the value
    first (still as ``StateNestingError``).
    """
    global _limit
    if type(limit) is not int or limit < 1:
        raise ValueError(f"the nesting limit must be a positive int, not {limit!r}")
    with _limit_lock:
        previous, _limit = _limit, limit
    return previous


def marker_bound(data: bytes, format: str) -> int:
    """An upper bound on the nesting depth of ``data``: how many bytes could open a container."""
    return len(data.translate(None, _DELETE_ALL_BUT[format]))


def nesting_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers (dict, list, tuple, set) more than ``limit`` deep.

    ``[]`` is one level, ``[[1]]`` two, a scalar none. Iterative, and it stops at the first
    container past the limit, so it is safe and cheap on hostile input (e.g. a parsed JSON
    body, before anything else touches it).
    """
    if type(limit) is not int or limit < 0:
        raise ValueError(f"limit must be a non-negative int, not {limit!r}")
    if type(value) not in _CONTAINERS:
        return False
    if limit == 0:
        return True
    containers = _CONTAINERS
    items = value.values() if type(value) is dict else value
    for item in items:
        if type(item) in containers:
            break
    else:
        return False  # the common case, e.g. flat metadata: one level
    stack = [iter(items)]
    while stack:
        for item in stack[-1]:
            if type(item) in containers:
                if len(stack) >= limit:
                    return True
                stack.append(iter(item.values() if type(item) is dict else item))
                break
        else:
            stack.pop()
    return False


def check_msgpack_tree(tree: Any, limit: int) -> str | None:
    """What in a decoded MessagePack tree ``encode`` could never have written, if anything.

    The codec writes only str map keys, finite floats and no extension types (MessagePack's
    timestamps included); ``bytes``, which it writes inside a tag, decode to bytes anywhere.
    Returns a description naming where the first offence is
    (or that the tree is nested past ``limit``), ``None`` when the tree is clean.
    """
    problem = _msgpack_problem(None, "", tree)
    if problem is not None or type(tree) not in (dict, list):
        return problem
    # (iterator over (key, value), the container, the key it sits at): paths are built only
    # for an offence, and plain scalars cost one type check each.
    stack: list[tuple[Any, Any, Any]] = [(_slots(tree), tree, None)]
    clean = _CLEAN
    while stack:
        slots, container, _ = stack[-1]
        is_map = type(container) is dict
        for key, value in slots:
            t = type(value)
            if (is_map and type(key) is not str) or t not in clean:
                problem = _msgpack_problem(container, key, value)
                if problem is not None:
                    keys = [entry[2] for entry in stack[1:]] + [key]
                    return f"{problem} at {''.join(f'[{k!r}]' for k in keys)}"
            if t is dict or t is list:
                if len(stack) >= limit:
                    return f"nested deeper than {limit} levels"
                stack.append((_slots(value), value, key))
                break
        else:
            stack.pop()
    return None


def _slots(container: Any) -> Any:
    return iter(container.items()) if type(container) is dict else enumerate(container)


_SCALARS = frozenset({str, int, bool, type(None), dict, list, bytes})
_CLEAN = _SCALARS


def _msgpack_problem(container: Any, key: Any, value: Any) -> str | None:
    t = type(value)
    if type(container) is dict and type(key) is not str:
        return f"a map key of type {type(key).__name__}"
    if t in _SCALARS:
        return None
    if t is float:
        return None if math.isfinite(value) else f"a non-finite float {value!r}"
    return f"a {t.__module__}.{t.__qualname__} value"
