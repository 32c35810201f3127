"""Session-store fixtures: every store behaviour test runs against each backend.

The Cosmos DB entries use the emulator's per-test container (``tests/cosmos_emulator.py``,
loaded by ``tests/conftest.py``); they skip where the emulator cannot run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checkflow.sessions import FileSessionStore, InMemorySessionStore, SessionStore


@pytest.fixture(params=["memory", "file-json", "file-msgpack", "cosmos-json", "cosmos-msgpack",
                        "cosmosaccount-json"])
def session_store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    backend, _, fmt = request.param.partition("-")
    if backend == "memory":
        return InMemorySessionStore()
    if backend == "file":
        return FileSessionStore(tmp_path / "sessions", format=fmt)
    from checkflow.storage.cosmos import CosmosSessionStore

    container = "cosmos_account_container" if backend == "cosmosaccount" else "cosmos_container"
    return CosmosSessionStore(request.getfixturevalue(container), format=fmt)
