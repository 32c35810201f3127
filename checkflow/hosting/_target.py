"""Resolve what a host serves: an object, a builder, or a zero-argument factory (sync or async).

Resolved once, on first use, and cached: hosts build nothing per request. This module must
never hold per-conversation state.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Resolver"]

T = TypeVar("T")


class Resolver(Generic[T]):
    """Turns a target into the one ``T`` a host uses, at most once."""

    def __init__(
        self, target: object, *, is_instance: Callable[[object], bool], what: str
    ) -> None:
        self._target = target
        self._is_instance = is_instance
        self._what = what
        self._value: T | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> T:
        """The resolved value; the first caller builds it, concurrent callers wait for it."""
        if self._value is not None:
            return self._value
        async with self._lock:
            if self._value is None:
                self._value = await self._resolve()
        return self._value

    async def _resolve(self) -> T:
        target = self._target
        if self._is_instance(target):
            return target  # type: ignore[return-value]
        build = getattr(target, "build", None)
        if callable(build) and not isinstance(target, type):
            target = build()
        elif callable(target) and not isinstance(target, type):
            target = target()
        if inspect.isawaitable(target):
            target = await target
        if not self._is_instance(target):
            raise TypeError(
                f"the hosted target must be a {self._what}, a builder or a zero-argument "
                f"factory of one; got {target!r:.80}"
            )
        return target  # type: ignore[return-value]


