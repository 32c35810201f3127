"""Run a function in a forked child of the test process and bring back what it returned."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any


def in_forked_child(produce: Callable[[], Any]) -> Any:
    """What ``produce()`` returns in a forked child (the child inherits this process's state,
    so a test can show what a fork must draw afresh)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=lambda: queue.put(produce()))
    child.start()
    result = queue.get(timeout=10)
    child.join(10)
    return result
