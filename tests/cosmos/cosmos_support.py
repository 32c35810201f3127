"""Helpers shared by the Cosmos DB tests: states, raw item inspection, a fault-injecting proxy."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from checkflow.storage.cosmos._layout import partition_key


def make_state(payload: Any = "x", **workflow_state: Any) -> dict[str, Any]:
    """A valid four-bucket snapshot state carrying ``payload``."""
    return {
        "workflow_state": {"iteration": 1, **workflow_state},
        "executor_states": {"worker": {"payload": payload}},
        "edge_states": {},
        "messages": {"input": [1], "pending": [], "output": []},
    }


def state_of_size(size: int, seed: str = "a") -> dict[str, Any]:
    """A state whose payload is ``size`` characters of varied (not compressible-looking) text."""
    unit = f"{seed}-0123456789abcdefghijklmnopqrstuvwxyz|"
    return make_state((unit * (size // len(unit) + 1))[:size])


async def partition_items(container: Any, checkpoint_id: str) -> dict[str, dict[str, Any]]:
    """Every item in the checkpoint's partition, by id, system fields included."""
    pk = partition_key(checkpoint_id)
    rows = container.query_items(
        "SELECT * FROM c WHERE c.pk = @pk",
        parameters=[{"name": "@pk", "value": pk}],
        partition_key=pk,
    )
    return {row["id"]: row async for row in rows}


class FaultyProxy:
    """A loopback TCP proxy in front of the emulator that can break transactional batches.

    ``mode`` decides what happens to batch requests: ``None`` passes them, ``"drop_request"``
    closes the connection before the emulator sees them, ``"drop_response"`` lets the emulator
    apply them and closes the connection before the answer reaches the client. Either leaves
    the client not knowing whether the batch landed, which is the point.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.mode: str | None = None
        self.remaining: int | None = None  # batches left to break; None: every one
        self.batches_seen = 0
        self._server: asyncio.Server | None = None

    def arm(self, mode: str, *, times: int | None = None) -> None:
        """Break the next ``times`` batches (all of them when ``None``) the way ``mode`` says."""
        self.mode, self.remaining = mode, times

    def _fault_for_next_batch(self) -> str | None:
        self.batches_seen += 1
        if self.mode is None or self.remaining == 0:
            return None
        if self.remaining is not None:
            self.remaining -= 1
        return self.mode

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        upstream_r, upstream_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        cut = asyncio.Event()

        async def to_upstream() -> None:
            while data := await client_r.read(1 << 16):
                if b"x-ms-cosmos-is-batch-request" in data.lower():
                    fault = self._fault_for_next_batch()
                    if fault == "drop_request":
                        break
                    if fault == "drop_response":
                        cut.set()
                upstream_w.write(data)
                await upstream_w.drain()

        async def to_client() -> None:
            while data := await upstream_r.read(1 << 16):
                if cut.is_set():
                    break
                client_w.write(data)
                await client_w.drain()

        tasks = [asyncio.ensure_future(to_upstream()), asyncio.ensure_future(to_client())]
        with contextlib.suppress(ConnectionError):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for writer in (client_w, upstream_w):
            writer.close()


def race_from_own_process(
    endpoint: str, key: str, database: str, container: str, barrier: Any, results: Any
) -> None:
    """Child-process body: load ``run-1`` on its own client, wait at ``barrier``, commit.

    Puts ``("won", snapshot_id)`` or ``("conflict", actual_head)`` on ``results``.
    """
    asyncio.run(_race_once(endpoint, key, database, container, barrier, results))


async def _race_once(
    endpoint: str, key: str, database: str, container: str, barrier: Any, results: Any
) -> None:
    from azure.cosmos.aio import CosmosClient

    from checkflow.errors import CheckpointConflictError
    from checkflow.storage.cosmos import CosmosCheckpointStorage

    async with CosmosClient(endpoint, key, enable_endpoint_discovery=False) as client:
        proxy = client.get_database_client(database).get_container_client(container)
        checkpoint = await CosmosCheckpointStorage(proxy).load("run-1")
        await asyncio.to_thread(barrier.wait, 60)
        try:
            snapshot = await checkpoint.commit_snapshot(state=make_state("from a process"))
        except CheckpointConflictError as exc:
            results.put(("conflict", exc.actual_head_snapshot_id))
        else:
            results.put(("won", snapshot.snapshot_id))
