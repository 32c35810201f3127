"""``checkflow._aio.eager_future``: ``ensure_future`` with the first step run at once.

What a commit relies on: a coroutine that never suspends costs no task; one that suspends
behaves as a task would (its own context, cancellation thrown in, errors on await).
Suspensions are explicit futures the test completes; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from checkflow._aio import eager_future

var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="caller")


async def _immediate(value: int) -> int:
    var.set("inside")
    return value * 2


async def test_a_coroutine_that_never_suspends_comes_back_done_without_a_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = asyncio.get_running_loop()
    made: list[Any] = []
    real = loop.create_task

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "create_task", counting)
    future = eager_future(_immediate(21))
    assert future.done() and future.result() == 42
    assert made == []
    assert var.get() == "caller"  # it ran in a copy of the caller's context


async def test_a_coroutine_that_suspends_goes_on_in_a_task_in_one_context() -> None:
    gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    seen: list[str] = []

    async def suspending() -> str:
        token = var.set("span")
        answer = await gate  # a tracing interceptor would reset its token after this
        seen.append(var.get())
        var.reset(token)  # raises if the rest ran in another context
        return answer

    future = eager_future(suspending())
    assert not future.done() and isinstance(future, asyncio.Task)
    assert var.get() == "caller"
    gate.set_result("done")
    assert await future == "done"
    assert seen == ["span"]


async def test_errors_surface_on_await_whether_raised_before_or_after_a_suspension() -> None:
    async def early() -> None:
        raise KeyError("early")

    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def late() -> None:
        await gate
        raise KeyError("late")

    first = eager_future(early())
    with pytest.raises(KeyError, match="early"):
        await first
    second = eager_future(late())
    gate.set_result(None)
    with pytest.raises(KeyError, match="late"):
        await second


async def test_a_cancellation_is_thrown_into_the_suspended_coroutine() -> None:
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    cleaned: list[str] = []

    async def waits() -> None:
        try:
            await gate
        except asyncio.CancelledError:
            cleaned.append("cancelled")
            raise

    future = eager_future(waits())
    await asyncio.sleep(0)  # let the task take over the wait
    future.cancel()
    with pytest.raises(asyncio.CancelledError):
        await future
    assert cleaned == ["cancelled"] and gate.cancelled()


async def test_a_shielded_commit_survives_its_caller_being_cancelled() -> None:
    gate: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def commit() -> int:
        return await gate

    future = eager_future(commit())

    async def caller() -> int:
        return await asyncio.shield(future)

    waiting = asyncio.ensure_future(caller())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    gate.set_result(7)
    assert await future == 7


async def test_an_awaitable_that_is_no_coroutine_is_wrapped_as_ensure_future_would() -> None:
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    done.set_result(3)
    assert eager_future(done) is done
