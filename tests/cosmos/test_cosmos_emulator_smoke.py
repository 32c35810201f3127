"""The emulator the Cosmos tests run against behaves like Cosmos DB where checkflow relies on it.

These pin the server-side semantics the storage depends on (conditional batches, atomicity,
partition-scoped queries), so a broken emulator fails here first, with a clear name.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from azure.cosmos.exceptions import CosmosBatchOperationError, CosmosResourceNotFoundError
from cosmos_emulator import CosmosEmulator, EmulatorUnavailableError, start_emulator

PK = "run-1"


async def _seed(container: Any) -> dict[str, Any]:
    return await container.create_item({"id": "manifest", "pk": PK, "head": "s1"})


async def _advance_to_s2(container: Any, etag: str) -> list[dict[str, Any]]:
    """The storage's commit shape: conditional manifest replace first, then the new item."""
    return await container.execute_item_batch(
        [
            (
                "replace",
                ("manifest", {"id": "manifest", "pk": PK, "head": "s2"}),
                {"if_match_etag": etag},
            ),
            ("create", ({"id": "s2", "pk": PK, "body": "x" * 100},)),
        ],
        partition_key=PK,
    )


async def test_batch_with_conditional_replace_first_applies_every_operation(
    cosmos_container: Any,
) -> None:
    manifest = await _seed(cosmos_container)
    results = await _advance_to_s2(cosmos_container, manifest["_etag"])
    assert [r["statusCode"] for r in results] == [200, 201]
    stored = await cosmos_container.read_item("manifest", partition_key=PK)
    assert stored["head"] == "s2"
    assert (await cosmos_container.read_item("s2", partition_key=PK))["body"] == "x" * 100


async def test_stale_etag_fails_the_batch_with_412_and_applies_nothing(
    cosmos_container: Any,
) -> None:
    manifest = await _seed(cosmos_container)
    await cosmos_container.replace_item("manifest", {"id": "manifest", "pk": PK, "head": "s9"})
    with pytest.raises(CosmosBatchOperationError) as caught:
        await _advance_to_s2(cosmos_container, manifest["_etag"])
    assert caught.value.error_index == 0
    assert caught.value.operation_responses[0]["statusCode"] == 412
    assert (await cosmos_container.read_item("manifest", partition_key=PK))["head"] == "s9"
    with pytest.raises(CosmosResourceNotFoundError):
        await cosmos_container.read_item("s2", partition_key=PK)


async def test_failing_second_operation_rolls_back_the_first(cosmos_container: Any) -> None:
    manifest = await _seed(cosmos_container)
    await cosmos_container.create_item({"id": "s2", "pk": PK, "old": True})
    with pytest.raises(CosmosBatchOperationError) as caught:
        await _advance_to_s2(cosmos_container, manifest["_etag"])
    assert caught.value.error_index == 1
    assert caught.value.operation_responses[1]["statusCode"] == 409
    after = await cosmos_container.read_item("manifest", partition_key=PK)
    assert (after["head"], after["_etag"]) == ("s1", manifest["_etag"])


async def test_partition_scoped_query_sees_only_its_partition(cosmos_container: Any) -> None:
    await _seed(cosmos_container)
    await cosmos_container.create_item({"id": "manifest", "pk": "other", "head": "z"})
    query = "SELECT c.id, c.head FROM c WHERE c.pk = @pk"
    rows = [
        row
        async for row in cosmos_container.query_items(
            query, parameters=[{"name": "@pk", "value": PK}], partition_key=PK
        )
    ]
    assert rows == [{"id": "manifest", "head": "s1"}]


def test_the_launcher_starts_its_own_emulator_and_stops_exactly_it(
    cosmos_emulator: CosmosEmulator,
) -> None:
    second = start_emulator()
    try:
        assert second.endpoint != cosmos_emulator.endpoint
        assert second.endpoint.startswith("http://127.0.0.1:")
    finally:
        second.stop()
    assert second.process.poll() is not None
    assert cosmos_emulator.process.poll() is None


def test_an_emulator_that_cannot_start_fails_clearly_and_leaves_no_process(
    cosmos_emulator: CosmosEmulator,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(EmulatorUnavailableError, match="EADDRINUSE") as caught:
            start_emulator(port=taken.getsockname()[1], timeout=60)
    assert "was not ready within 60 s" in str(caught.value)


_ORPHAN_PARENT = """
import sys
sys.path.insert(0, sys.argv[1])
from cosmos_emulator import start_emulator
emulator = start_emulator()
print(emulator.pid, flush=True)
sys.stdin.read()  # until the test kills this process
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is dead, only not yet reaped
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to tell a zombie")
def test_the_emulator_exits_when_the_process_that_started_it_is_killed(
    cosmos_emulator: CosmosEmulator,
) -> None:
    tests = str(Path(__file__).resolve().parents[1])
    parent = subprocess.Popen([sys.executable, "-c", _ORPHAN_PARENT, tests],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    line = parent.stdout.readline()  # flushed once its emulator is ready
    assert line.strip().isdigit(), line
    node = int(line)
    try:
        assert _alive(node)
        parent.send_signal(signal.SIGKILL)  # no finalizer, no atexit: only the pipe closes
        parent.wait(60)
        deadline = time.monotonic() + 60
        while _alive(node):
            assert time.monotonic() < deadline, f"emulator {node} outlived its parent"
            time.sleep(0.05)
    finally:
        if _alive(node):
            os.kill(node, signal.SIGKILL)
