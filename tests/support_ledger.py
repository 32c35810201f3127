"""The support sample's refund ledger (``CHECKFLOW_SUPPORT_LEDGER``): what a test's servers paid.

A pytest plugin (``tests/conftest.py``): the ``ledger`` fixture points the servers a test
starts at a fresh file; ``paid(ledger)`` reads its lines, one refund each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The ledger of the servers started in this test (set in their environment)."""
    path = tmp_path / "ledger.jsonl"
    monkeypatch.setenv("CHECKFLOW_SUPPORT_LEDGER", str(path))
    return path


def paid(ledger: Path) -> list[dict[str, Any]]:
    """The refunds recorded, in order (none before the first)."""
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text().splitlines() if line]
