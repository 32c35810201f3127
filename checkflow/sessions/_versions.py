"""Opaque store versions and the one compare-and-set rule all session stores share.

Pure functions shared by every store (memory, file and Cosmos DB); this module must never do
I/O.
"""

from __future__ import annotations

import itertools
import os

from checkflow.errors import SessionConflictError

__all__ = ["check_expected_version", "check_write_condition", "new_version"]


class _Versions:
    """A random 64-bit prefix per process (drawn again in a forked child) and a counter:
    unique across processes like a uuid4, without reading the system's randomness on every
    write (each hosted turn writes its session twice)."""

    def __init__(self) -> None:
        self.reset()
        os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self.prefix = os.urandom(8).hex()
        self.counter = itertools.count(1)

    def next(self) -> str:
        return f"{self.prefix}{next(self.counter):016x}"


_VERSIONS = _Versions()


def new_version() -> str:
    """A fresh opaque version: never reused, even after a delete and re-create."""
    return _VERSIONS.next()


def check_write_condition(expected_version: str | None, create: bool) -> None:
    """Refuse a write that is both create-only and conditioned on an existing version."""
    if create and expected_version is not None:
        raise ValueError("give expected_version or create=True, not both")


def check_expected_version(
    session_id: str,
    *,
    expected_version: str | None,
    actual_version: str | None,
    create: bool = False,
) -> None:
    """Raise ``SessionConflictError`` unless the write's condition holds.

    ``create`` holds only while no session exists; ``expected_version`` holds when it is
    ``None`` or current.
    """
    if create and actual_version is not None:
        raise SessionConflictError(session_id, expected_version=None, actual_version=actual_version)
    if expected_version is not None and expected_version != actual_version:
        raise SessionConflictError(
            session_id, expected_version=expected_version, actual_version=actual_version
        )
