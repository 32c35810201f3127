"""Fixtures for the engine tests: the storages they run against."""

from __future__ import annotations

from typing import Any

import pytest

from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage


@pytest.fixture(params=["memory", "file"])
def storage(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    """Each storage-backed engine test runs against memory and file storage."""
    if request.param == "memory":
        return InMemoryCheckpointStorage()
    return FileCheckpointStorage(tmp_path / "checkpoints")
