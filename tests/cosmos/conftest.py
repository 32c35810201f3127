"""Fixtures for the Cosmos DB storage tests: a storage and a session store on a fresh container.

The emulator itself and the per-test database/container come from ``tests/cosmos_emulator.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from cosmos_emulator import CosmosEmulator, cosmos_client
from cosmos_support import FaultyProxy

from checkflow.storage.cosmos import CosmosCheckpointStorage, CosmosSessionStore


@pytest.fixture
def cosmos_storage(cosmos_container: Any) -> CosmosCheckpointStorage:
    return CosmosCheckpointStorage(cosmos_container)


@pytest.fixture
def cosmos_sessions(cosmos_container: Any) -> CosmosSessionStore:
    return CosmosSessionStore(cosmos_container)


@pytest.fixture
async def faulty_proxy(cosmos_emulator: CosmosEmulator) -> AsyncIterator[FaultyProxy]:
    port = int(cosmos_emulator.endpoint.rstrip("/").rsplit(":", 1)[1])
    proxy = FaultyProxy(port)
    await proxy.start()
    yield proxy
    await proxy.close()


@pytest.fixture
async def proxied_storage(
    cosmos_emulator: CosmosEmulator, faulty_proxy: FaultyProxy, cosmos_container: Any
) -> AsyncIterator[Callable[..., Awaitable[CosmosCheckpointStorage]]]:
    """Opens storages whose clients reach ``cosmos_container`` only through ``faulty_proxy``.

    Keyword arguments go to the ``CosmosClient`` (``retry_total=0`` turns the SDK's own
    retries off so a broken batch surfaces at once).
    """
    async with contextlib.AsyncExitStack() as clients:

        async def open_storage(**client_options: Any) -> CosmosCheckpointStorage:
            client = await clients.enter_async_context(
                cosmos_client(cosmos_emulator, endpoint=faulty_proxy.endpoint, **client_options)
            )
            database = client.get_database_client(cosmos_container.database_link.split("/")[-1])
            return CosmosCheckpointStorage(database.get_container_client(cosmos_container.id))

        yield open_storage
