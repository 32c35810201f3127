"""Random ids that cost no system call: one generator per process, seeded from the system's
randomness (and seeded again in a forked child).

For ids that must be unique, never for secrets. Reading the system's randomness for every id
is a system call, and a system call lets another thread take the GIL: in a server whose
worker threads finish file writes, the event loop can then wait a long while to get it back.
This module must never import anything else from checkflow.
"""

from __future__ import annotations

import os
import random

__all__ = ["random_bits", "random_hex"]

_random = random.Random(os.urandom(32))


def _reseed() -> None:
    _random.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)


def random_bits(n: int) -> int:
    """``n`` random bits."""
    return _random.getrandbits(n)


def random_hex() -> str:
    """32 hex digits laid out as ``uuid.uuid4().hex`` is (version 4, RFC 4122 variant)."""
    value = _random.getrandbits(128)
    value = (value & ~(0xC000 << 48)) | (0x8000 << 48)
    value = (value & ~(0xF000 << 64)) | (4 << 76)
    return f"{value:032x}"
