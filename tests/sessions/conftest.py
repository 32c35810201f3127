"""Session-store fixtures: every store behaviour test runs against each backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkflow.sessions import FileSessionStore, InMemorySessionStore, SessionStore


@pytest.fixture(params=["memory", "file-json", "file-msgpack"])
def session_store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    if request.param == "memory":
        return InMemorySessionStore()
    fmt = request.param.removeprefix("file-")
    return FileSessionStore(tmp_path / "sessions", format=fmt)
