"""``--storage`` URLs: where a server or a tool keeps sessions and checkpoints.

``memory:`` (this process only), ``file:PATH`` (the embedded default ``file:./.checkflow``:
sessions under ``PATH/sessions``, checkpoints under ``PATH/checkpoints``), and ``cosmos:``
(Azure Cosmos DB; settings from environment variables, listed in ``COSMOS_SETTINGS``).
This module must never run a workflow; it only opens and closes stores.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkflow.checkpoints import CheckpointStorage
from checkflow.sessions import FileSessionStore, InMemorySessionStore, SessionStore
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage

__all__ = ["COSMOS_SETTINGS", "DEFAULT_STORAGE", "SCHEMES", "Storages", "open_storage"]

DEFAULT_STORAGE = "file:./.checkflow"
SCHEMES = "memory:, file:PATH or cosmos:"
"""The URL forms ``open_storage`` takes, as every ``--storage`` help and error names them."""

COSMOS_SETTINGS = {
    "CHECKFLOW_COSMOS_ENDPOINT": "account endpoint, e.g. https://myaccount.documents.azure.com",
    "CHECKFLOW_COSMOS_KEY": "account key",
    "CHECKFLOW_COSMOS_DATABASE": "database name (default: checkflow)",
    "CHECKFLOW_COSMOS_CHECKPOINT_CONTAINER": "checkpoint container (default: checkpoints)",
    "CHECKFLOW_COSMOS_SESSION_CONTAINER": "session container (default: sessions)",
    "CHECKFLOW_COSMOS_VERIFY_TLS": "0 to accept the emulator's self-signed certificate",
}


@dataclass(frozen=True, slots=True)
class Storages:
    """The session store and checkpoint storage one ``--storage`` URL names."""

    session_store: SessionStore
    checkpoint_storage: CheckpointStorage


def _file_storages(path: str, must_exist: bool) -> Storages:
    root = Path(path or ".").expanduser()
    if must_exist and not root.is_dir():
        raise ValueError(f"--storage file:{path}: no such directory {str(root)!r}")
    return Storages(
        FileSessionStore(root / "sessions"), FileCheckpointStorage(root / "checkpoints")
    )


@contextlib.asynccontextmanager
async def _cosmos_storages() -> AsyncIterator[Storages]:
    from checkflow.storage.cosmos import CosmosCheckpointStorage, CosmosSessionStore

    env = os.environ
    missing = [k for k in ("CHECKFLOW_COSMOS_ENDPOINT", "CHECKFLOW_COSMOS_KEY") if not env.get(k)]
    if missing:
        raise ValueError(f"--storage cosmos: needs the environment variables {', '.join(missing)}")
    options: dict[str, Any] = {}
    if env.get("CHECKFLOW_COSMOS_VERIFY_TLS", "1").lower() in ("0", "false", "no"):
        options["connection_verify"] = False
    database = env.get("CHECKFLOW_COSMOS_DATABASE", "checkflow")
    endpoint, key = env["CHECKFLOW_COSMOS_ENDPOINT"], env["CHECKFLOW_COSMOS_KEY"]
    checkpoints = await CosmosCheckpointStorage.from_endpoint(
        endpoint, key, database=database,
        container=env.get("CHECKFLOW_COSMOS_CHECKPOINT_CONTAINER", "checkpoints"), **options)
    async with checkpoints:
        sessions = await CosmosSessionStore.from_endpoint(
            endpoint, key, database=database,
            container=env.get("CHECKFLOW_COSMOS_SESSION_CONTAINER", "sessions"), **options)
        async with sessions:
            yield Storages(sessions, checkpoints)


@contextlib.asynccontextmanager
async def open_storage(url: str = DEFAULT_STORAGE, *, must_exist: bool = False
                       ) -> AsyncIterator[Storages]:
    """Open the stores ``url`` names (closing any clients on exit); ``ValueError`` if unknown.

    ``must_exist`` (the inspection commands) refuses a ``file:`` directory that is not there,
    instead of showing an empty storage for a mistyped path.
    """
    scheme, sep, rest = url.partition(":")
    if not sep:
        raise ValueError(f"--storage {url!r}: expected {SCHEMES}")
    if scheme == "memory":
        yield Storages(InMemorySessionStore(), InMemoryCheckpointStorage())
    elif scheme == "file":
        yield _file_storages(rest, must_exist)
    elif scheme == "cosmos":
        async with _cosmos_storages() as storages:
            yield storages
    else:
        raise ValueError(f"--storage {url!r}: unknown scheme {scheme!r} (expected {SCHEMES})")
