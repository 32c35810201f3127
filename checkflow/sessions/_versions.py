"""Opaque store versions and the one compare-and-set rule all session stores share.

Pure functions; this module must never do I/O.
"""

from __future__ import annotations

import uuid

from checkflow.errors import SessionConflictError

__all__ = ["check_expected_version", "new_version"]


def new_version() -> str:
    """A fresh opaque version: never reused, even after a delete and re-create."""
    return uuid.uuid4().hex


def check_expected_version(
    session_id: str, *, expected_version: str | None, actual_version: str | None
) -> None:
    """Raise ``SessionConflictError`` unless ``expected_version`` is ``None`` or current."""
    if expected_version is not None and expected_version != actual_version:
        raise SessionConflictError(
            session_id, expected_version=expected_version, actual_version=actual_version
        )
