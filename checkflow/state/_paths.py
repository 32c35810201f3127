"""Lazy error paths for the codec walkers.

The walkers never build path strings on the happy path: a failure raises ``WalkError`` at the
bad value, and each enclosing container adds its own segment while the error unwinds. Only the
failing branch pays. This module must never import the public error classes' callers or any
other part of checkflow except ``checkflow.errors``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from checkflow.errors import StateEncodingError, StateError, UnregisteredStateTypeError

__all__ = ["TooDeepError", "WalkError", "join_path", "qualified_name"]

_HERE: Any = object()  # ``WalkError.child`` value meaning "the error is about the container itself"


def qualified_name(cls: type) -> str:
    """``module.QualName`` of a class: the default type id and the name errors show."""
    return f"{cls.__module__}.{cls.__qualname__}"


class TooDeepError(Exception):
    """Internal: a walked tree nests past the limit (or an encoded value contains itself)."""


class WalkError(Exception):
    """Internal: a codec failure unwinding through the containers that hold the bad value.

    ``child`` is the object the innermost container must locate among its items to name the
    next path segment; ``segments`` are collected innermost first.
    """

    def __init__(
        self,
        message: str,
        *,
        child: Any = _HERE,
        unregistered: str | None = None,
        hint: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.child = child
        self.unregistered = unregistered
        self.segments: list[str] = []

    def enter(self, container: Any, items: Iterable[Any] | None = None) -> None:
        """Record ``container``'s segment for the failing child, then stand for the container.

        ``items`` is what the walker iterated (e.g. the sorted members of a set) when that is
        not the container itself.
        """
        if self.child is not _HERE:
            segment = _locate(container if items is None else items, self.child)
            if segment:
                self.segments.append(segment)
        self.child = container

    def skip(self, container: Any) -> None:
        """Stand for ``container`` without adding a segment (e.g. a tagged value's payload)."""
        self.child = container

    def public(self, prefix: str) -> StateError:
        """The public error for this failure, with the full path."""
        path = join_path(prefix, reversed(self.segments))
        message = f"{self.message} at {path or '<root>'}{self.hint}"
        if self.unregistered is not None:
            return UnregisteredStateTypeError(message, path=path, type_name=self.unregistered)
        return StateEncodingError(message, path=path)


def key_segment(key: str) -> str:
    """A mapping key as a path segment: ``.name`` for identifiers, else ``['a key']``."""
    return f".{key}" if key.isidentifier() else f"[{key!r}]"


def join_path(prefix: str, segments: Iterable[str]) -> str:
    """``prefix`` followed by ``segments``, without a leading dot when there is no prefix."""
    path = prefix + "".join(segments)
    return path[1:] if path.startswith(".") and not prefix else path


def _locate(items: Any, child: Any) -> str:
    if type(items) is dict:
        for key, value in items.items():
            if value is child:
                return key_segment(key) if type(key) is str else f"[{key!r}]"
        return ""
    for index, value in enumerate(items):
        if value is child:
            return f"[{index}]"
    return ""
