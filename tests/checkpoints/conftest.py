"""Fixtures for the checkpoint model tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

State = dict[str, Any]


def four_buckets(n: int = 0, **workflow_state: Any) -> State:
    return {
        "workflow_state": {"n": n, **workflow_state},
        "executor_states": {},
        "edge_states": {},
        "messages": {"input": [], "pending": [], "output": []},
    }


@pytest.fixture
def make_state() -> Callable[..., State]:
    """A valid snapshot state (the four buckets) whose ``workflow_state["n"]`` is ``n``."""
    return four_buckets
