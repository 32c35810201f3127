"""LoopLocks: the in-process lock table both file stores take before their ``flock``."""

from __future__ import annotations

import asyncio
import gc
import weakref

from checkflow._fs import LoopLocks


async def test_one_key_in_one_loop_is_always_the_same_lock() -> None:
    locks: LoopLocks[str] = LoopLocks()
    assert locks("a") is locks("a")
    assert locks("a") is not locks("b")


async def test_a_held_lock_excludes_a_second_taker_of_the_same_key() -> None:
    locks: LoopLocks[str] = LoopLocks()
    async with locks("a"):
        assert locks("a").locked()
        assert not locks("b").locked()


def test_each_event_loop_gets_its_own_lock_for_a_key() -> None:
    locks: LoopLocks[str] = LoopLocks()
    seen: list[asyncio.Lock] = []  # kept alive, so identity is meaningful

    async def take() -> None:
        lock = locks("a")
        async with lock:  # usable: it belongs to the running loop
            seen.append(lock)

    for _ in range(2):
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(take())
        finally:
            loop.close()
    assert seen[0] is not seen[1]


async def test_an_unused_lock_is_forgotten() -> None:
    locks: LoopLocks[str] = LoopLocks()
    async with locks("a"):
        pass
    released = weakref.ref(locks("a"))
    gc.collect()
    assert released() is None  # the table does not keep every id ever locked
