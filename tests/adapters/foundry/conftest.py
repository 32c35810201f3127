"""Real servers for the Foundry end-to-end tests, the same ones ``tests/e2e`` starts.

``python -m checkflow serve tests.adapters.foundry.foundry_flows:workflow --adapters
native,foundry`` on loopback with file storage under the test's folder; gates are marker files (see
``foundry_flows``). The server and gate helpers are the e2e suite's own, loaded from
``tests/e2e/conftest.py``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_E2E = Path(__file__).resolve().parents[2] / "e2e" / "conftest.py"
_spec = importlib.util.spec_from_file_location("checkflow_e2e_servers", _E2E)
assert _spec is not None and _spec.loader is not None
_servers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_servers)
Server: Any = _servers.Server
Gates: Any = _servers.Gates

TARGET = "tests.adapters.foundry.foundry_flows:workflow"


@pytest.fixture
def gates(tmp_path: Path) -> Any:
    folder = tmp_path / "gates"
    folder.mkdir()
    return Gates(folder)


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def start_foundry(store_dir: Path, gates: Any) -> Iterator[Any]:
    """``start_foundry(*extra, storage=None, target=TARGET)`` -> a running server with the
    Foundry adapter (and the native API), on the test's file storage unless ``storage`` names
    another; every server is stopped after the test."""
    servers: list[Any] = []

    def start(*extra: str, adapters: str = "native,foundry", storage: str | None = None,
              target: str = TARGET) -> Any:
        args = ("--adapters", adapters, *extra) if adapters else extra
        server = Server(target, storage or f"file:{store_dir}", gates.folder, *args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
