"""Fixtures for the Cosmos DB storage tests: a storage and a session store on a fresh container.

The emulator itself and the per-test database/container come from ``tests/cosmos_emulator.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from checkflow.storage.cosmos import CosmosCheckpointStorage, CosmosSessionStore


@pytest.fixture
def cosmos_storage(cosmos_container: Any) -> CosmosCheckpointStorage:
    return CosmosCheckpointStorage(cosmos_container)


@pytest.fixture
def cosmos_sessions(cosmos_container: Any) -> CosmosSessionStore:
    return CosmosSessionStore(cosmos_container)
