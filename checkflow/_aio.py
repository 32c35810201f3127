"""Asyncio helpers shared by the layers. This module must never import anything else from
checkflow."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["eager_future", "shielded"]

T = TypeVar("T")


def eager_future(awaitable: Awaitable[T]) -> asyncio.Future[T]:
    """What ``asyncio.ensure_future(awaitable)`` gives, with the coroutine's first step run now.

    A coroutine that finishes without suspending (an in-memory storage's commit) then costs
    no task and no trip through the event loop: the future comes back done, and awaiting or
    shielding it returns at once. One that suspends goes on in a task, exactly as it would
    have: the whole coroutine runs in one copy of the caller's context, as a task's does, so
    context variables it sets (a tracing span) never leak into the caller.
    """
    if not asyncio.iscoroutine(awaitable):
        return asyncio.ensure_future(awaitable)
    coro: Coroutine[Any, Any, T] = awaitable
    context = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    try:
        yielded = context.run(coro.send, None)
    except StopIteration as stop:
        future: asyncio.Future[T] = loop.create_future()
        future.set_result(stop.value)
        return future
    except asyncio.CancelledError:
        future = loop.create_future()
        future.cancel()
        return future
    except Exception as exc:  # as a task would: raised when the future is awaited
        future = loop.create_future()
        future.set_exception(exc)
        return future
    return loop.create_task(_Rest(coro, yielded).run(), context=context)


class _Rest:
    """A coroutine whose first step ran already, resumed where it suspended."""

    __slots__ = ("_coro", "_yielded")

    def __init__(self, coro: Coroutine[Any, Any, Any], yielded: Any) -> None:
        self._coro, self._yielded = coro, yielded

    async def run(self) -> Any:
        return await self

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, value = self._coro, self._yielded
        while True:
            try:
                sent = yield value  # the future it waits on goes up to the task, unchanged
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # a cancellation, thrown in by the task
                try:
                    value = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    value = coro.send(sent)
                except StopIteration as stop:
                    return stop.value


async def shielded(awaitable: Awaitable[T]) -> T:
    """Finish ``awaitable`` even if the caller is cancelled (a session write must land); one
    that never waits (in memory) costs no task."""
    return await asyncio.shield(eager_future(awaitable))
