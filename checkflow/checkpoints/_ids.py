"""Snapshot ids: unique strings that sort in creation order, even within one millisecond.

UUIDv7 layout (48-bit Unix milliseconds, version, 12-bit counter, variant, 62 random bits).
The 12-bit field is a monotonic counter within one millisecond; when it overflows the
timestamp is advanced by one millisecond, so ids never repeat or go backwards in a process.
The random bits come from ``checkflow._random`` (no system call per id). This module must
never depend on anything but the standard library and that module.
"""

from __future__ import annotations

import threading
import time

from checkflow._random import random_bits

__all__ = ["new_snapshot_id"]

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_snapshot_id() -> str:
    """Return a fresh UUIDv7 string; lexicographic order equals creation order in a process."""
    global _last_ms, _counter
    with _lock:
        now = time.time_ns() // 1_000_000
        if now > _last_ms:
            _last_ms, _counter = now, random_bits(10)
        else:
            _counter += 1
            if _counter > 0xFFF:
                _last_ms, _counter = _last_ms + 1, 0
        ms, counter = _last_ms, _counter
    rand = random_bits(62)
    value = (ms << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | rand
    h = f"{value:032x}"  # str(uuid.UUID(int=value)), without building the UUID object
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
