"""The only door to the Azure Cosmos DB SDK: imports, error classification, owned clients.

Everything azure lives behind this module so a missing ``cosmos`` extra fails with one clear
message, and so the stores classify SDK errors (conflict, not found, unknown outcome) the same
way. This module must never know about checkpoints or sessions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from checkflow._extras import requires_extra
from checkflow.state import Format

with requires_extra("cosmos", "checkflow.storage.cosmos"):
    # the async client's transport imports aiohttp only when a client is built: ask now
    import aiohttp  # noqa: F401
    from azure.core import MatchConditions
    from azure.core.exceptions import ServiceRequestError, ServiceResponseError
    from azure.cosmos import PartitionKey
    from azure.cosmos.aio import ContainerProxy, CosmosClient
    from azure.cosmos.exceptions import (
        CosmosBatchOperationError,
        CosmosClientTimeoutError,
        CosmosHttpResponseError,
    )

__all__ = [
    "PARTITION_KEY_PATH",
    "ContainerProxy",
    "CosmosBatchOperationError",
    "CosmosHttpResponseError",
    "CosmosResource",
    "MatchConditions",
    "delete_item_if_present",
    "is_outcome_unknown",
    "query_partition",
    "read_item_or_none",
    "status_of",
]

PARTITION_KEY_PATH = "/pk"
"""Every container checkflow uses is partitioned by this path."""

_UNKNOWN_OUTCOME_STATUS = frozenset({408})  # request timeout: the write may have landed


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries, or ``None`` when it is not an HTTP answer."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_outcome_unknown(exc: BaseException) -> bool:
    """True when a write may or may not have been applied (timeouts, dropped connections)."""
    if isinstance(
        exc,
        ServiceRequestError | ServiceResponseError | CosmosClientTimeoutError | TimeoutError,
    ):
        return True
    return isinstance(exc, CosmosHttpResponseError) and status_of(exc) in _UNKNOWN_OUTCOME_STATUS


async def read_item_or_none(
    container: ContainerProxy, item_id: str, partition_key: str
) -> dict[str, Any] | None:
    """The item, or ``None`` when the service answers 404; other errors propagate."""
    try:
        item: dict[str, Any] = await container.read_item(item_id, partition_key=partition_key)
    except CosmosHttpResponseError as exc:
        if status_of(exc) == 404:
            return None
        raise
    return item


async def delete_item_if_present(
    container: ContainerProxy, item_id: str, partition_key: str
) -> bool:
    """Delete the item; ``False`` when it was already gone (404), other errors propagate."""
    try:
        await container.delete_item(item_id, partition_key=partition_key)
    except CosmosHttpResponseError as exc:
        if status_of(exc) == 404:
            return False
        raise
    return True


async def query_partition(
    container: ContainerProxy, partition_key: str, sql: str, **parameters: Any
) -> list[dict[str, Any]]:
    """Run ``sql`` inside ONE logical partition; ``sql`` must filter on ``c.pk = @pk`` too.

    The SQL filter is required by the emulator and keeps the query honest on the service.
    """
    params: list[dict[str, object]] = [{"name": "@pk", "value": partition_key}]
    params += [{"name": f"@{name}", "value": value} for name, value in parameters.items()]
    pager = container.query_items(sql, parameters=params, partition_key=partition_key)
    return [row async for row in pager]


async def _open_container(
    endpoint: str,
    credential: Any,
    database: str,
    container: str,
    client_options: Mapping[str, Any],
) -> tuple[CosmosClient, ContainerProxy]:
    client = CosmosClient(endpoint, credential=credential, **client_options)
    try:
        db = await client.create_database_if_not_exists(database)
        proxy = await db.create_container_if_not_exists(
            container, partition_key=PartitionKey(path=PARTITION_KEY_PATH)
        )
    except BaseException:
        await client.close()
        raise
    return client, proxy


class CosmosResource:
    """A store on one container; when built by ``from_endpoint`` it also owns the client.

    ``format`` ("json", readable in the portal, or "msgpack", base64 in the item) is the state
    encoding new writes use. Use the store as an async context manager (or call ``aclose()``)
    to close an owned client; a container passed in by the caller is never closed here.
    """

    def __init__(self, container: ContainerProxy, *, format: Format = "json") -> None:
        if format not in ("json", "msgpack"):
            raise ValueError(f"format must be 'json' or 'msgpack', not {format!r}")
        self.container = container
        self.format: Format = format
        self._owned_client: CosmosClient | None = None

    @classmethod
    async def from_endpoint(
        cls,
        endpoint: str,
        credential: Any,
        *,
        database: str,
        container: str,
        format: Format = "json",
        **client_options: Any,
    ) -> Self:
        """Connect, and create the database and container (partition key ``/pk``) if missing.

        ``credential`` is an account key or an ``AsyncTokenCredential``; ``client_options`` go
        to ``azure.cosmos.aio.CosmosClient``. The store owns (and closes) that client.
        """
        client, proxy = await _open_container(
            endpoint, credential, database, container, client_options
        )
        store = cls(proxy, format=format)
        store._owned_client = client
        return store

    async def aclose(self) -> None:
        """Close the client this store opened itself (nothing when given a container)."""
        client, self._owned_client = self._owned_client, None
        if client is not None:
            await asyncio.shield(client.close())

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
