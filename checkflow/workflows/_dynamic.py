"""Handlers built at construction, for executors whose types come from what they wrap.

A nested workflow accepts what its child's start executor accepts; a functional workflow what
its function's first parameter says. Such executors build per-instance handler closures and
return them from ``_handler_functions``; this module gives those closures the annotations the
engine reads. It must never hold per-run state.
"""

from __future__ import annotations

import typing
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

__all__ = ["HandlerFunctions", "handler_function", "union_of"]

HandlerFunctions = list[tuple[str, str, Callable[..., Any]]]
"""What ``Executor._handler_functions`` returns: (kind, name, callable) per handler."""


def handler_function(
    fn: Callable[..., Awaitable[None]], **annotations: Any
) -> Callable[..., Awaitable[None]]:
    """Set ``fn``'s annotations (parameter name -> type) and return it."""
    fn.__annotations__ = {**annotations, "return": None}
    return fn


def union_of(types: Iterable[Any], *, empty: Any = typing.Any) -> Any:
    """``A | B | ...`` of ``types``: ``typing.Any`` if one of them is, ``empty`` if none."""
    found = tuple(dict.fromkeys(types))
    if not found:
        return empty
    if typing.Any in found:
        return typing.Any
    return typing.Union[found]  # noqa: UP007 - built from a runtime tuple
