"""Fixtures of the agent tests: the model service, scripted with respx (tests/llm_script.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llm_script import Serve, mocked


@pytest.fixture
def llm() -> Iterator[Serve]:
    """``llm(*replies)`` (or ``llm(script)``): the model answers with them; -> the Model."""
    with mocked() as serve:
        yield serve
