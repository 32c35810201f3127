"""A local Cosmos DB emulator for the tests and benchmarks, and its pytest fixtures.

The emulator is ``@vercel/cosmosdb-server`` (pinned in ``tools/cosmos-emulator/package.json``)
run through the repository's own ``cosmos-shim.js``, which makes the server handle the Python
SDK's transactional batches. ``start_emulator()`` runs it on a free loopback port (waiting up
to 120 s, ``CHECKFLOW_EMULATOR_START_SECONDS``) and ``CosmosEmulator.stop()`` ends that one
process by its id; the emulator also exits by itself when the process that started it dies,
so an interrupted or killed test run leaves no node process behind. Without ``node`` or
without the npm package installed the Cosmos tests skip (``make emulator`` installs it),
unless ``CHECKFLOW_REQUIRE_EMULATOR=1``, when they fail instead.

This module never reaches outside the repository and never kills anything it did not start.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

EMULATOR_DIR = Path(__file__).resolve().parent.parent / "tools" / "cosmos-emulator"
SHIM_SCRIPT = EMULATOR_DIR / "cosmos-shim.js"
PACKAGE_DIR = EMULATOR_DIR / "node_modules" / "@vercel" / "cosmosdb-server"
# The emulator accepts any key; this is the well-known public key of Microsoft's emulator.
EMULATOR_KEY = (
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
)
REQUIRE_ENV = "CHECKFLOW_REQUIRE_EMULATOR"
START_SECONDS_ENV = "CHECKFLOW_EMULATOR_START_SECONDS"
DEFAULT_START_SECONDS = 120.0
_READY = re.compile(r"Ready to accept HTTPS? connections at (?P<host>[^\s:]+):(?P<port>\d+)")


class EmulatorUnavailableError(RuntimeError):
    """The emulator cannot run here; the message says how to make it run."""


@dataclass
class CosmosEmulator:
    """One running emulator process; ``endpoint`` is what a ``CosmosClient`` connects to."""

    process: subprocess.Popen[str]
    endpoint: str
    key: str = EMULATOR_KEY
    output: list[str] = field(default_factory=list, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout: float = 10.0) -> None:
        """End this emulator process (and only it) and reap it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        if self.process.stdin is not None:
            self.process.stdin.close()

    def _drain(self, ready: threading.Event) -> None:
        """Read every output line; set the endpoint and ``ready`` on the ready line (or EOF)."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            del self.output[:-200]
            match = _READY.search(line)
            if match is not None and not ready.is_set():
                self.endpoint = f"http://{match['host']}:{match['port']}/"
                ready.set()
        ready.set()  # the process ended (or closed its output) before it was ready


def emulator_unavailable_reason() -> str | None:
    """Why the emulator cannot start here, or ``None`` when it can."""
    if shutil.which("node") is None:
        return "node is not installed (install Node.js 20+, then run `make emulator`)"
    if not (PACKAGE_DIR / "package.json").is_file():
        return (
            f"the emulator's npm package is not installed in {EMULATOR_DIR.name}/ "
            "(run `make emulator`, or `make test`, which does it)"
        )
    return None


def start_emulator(*, timeout: float | None = None, port: int = 0) -> CosmosEmulator:
    """Start the emulator on a loopback port (``0``: a free one) and wait until it is ready.

    ``timeout`` defaults to ``$CHECKFLOW_EMULATOR_START_SECONDS`` or 120 s, generous for a slow,
    busy CI machine. The emulator's stdin is a pipe held by this process: when this process
    dies, however abruptly, the pipe closes and the emulator exits (``--exit-with-parent``),
    so no node process outlives the test run. On any failure the process is stopped and the
    error quotes what it said.
    """
    reason = emulator_unavailable_reason()
    if reason is not None:
        raise EmulatorUnavailableError(f"Cosmos DB emulator unavailable: {reason}")
    if timeout is None:
        timeout = float(os.environ.get(START_SECONDS_ENV, DEFAULT_START_SECONDS))
    node = shutil.which("node")
    assert node is not None
    command = [node, str(SHIM_SCRIPT), "-p", str(port), "--host", "127.0.0.1", "--no-ssl",
               "--exit-with-parent"]
    process = subprocess.Popen(
        command, cwd=EMULATOR_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )
    emulator = CosmosEmulator(process=process, endpoint="")
    # drain the output for the process's whole life so a chatty server never blocks
    ready = threading.Event()
    reader = threading.Thread(target=emulator._drain, args=(ready,), daemon=True)
    reader.start()
    if not ready.wait(timeout) or emulator.endpoint == "":
        emulator.stop()
        reader.join(5)
        said = "".join(emulator.output)[-2000:].strip() or "nothing"
        raise EmulatorUnavailableError(
            f"Cosmos DB emulator ({' '.join(command[1:])}) was not ready within {timeout:.0f} s "
            f"(exit code {process.poll()}; raise ${START_SECONDS_ENV} on a slow machine); "
            f"it said: {said}"
        )
    return emulator


def cosmos_client(emulator: CosmosEmulator, *, endpoint: str | None = None, **kwargs: Any) -> Any:
    """An async ``CosmosClient`` for the emulator, or for ``endpoint`` in front of it.

    Endpoint discovery is off so that a client given a proxy's endpoint stays on it.
    """
    from azure.cosmos.aio import CosmosClient

    kwargs.setdefault("enable_endpoint_discovery", False)
    return CosmosClient(endpoint or emulator.endpoint, credential=emulator.key, **kwargs)


# -- pytest fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def cosmos_emulator() -> Iterator[CosmosEmulator]:
    """The session's emulator; skips (or fails under CHECKFLOW_REQUIRE_EMULATOR=1) without it."""
    try:
        emulator = start_emulator()
    except EmulatorUnavailableError as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{exc} [{REQUIRE_ENV}=1]", pytrace=False)
        pytest.skip(f"{exc}; the Cosmos DB tests are skipped")
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
async def cosmos_database(cosmos_emulator: CosmosEmulator) -> AsyncIterator[Any]:
    """A fresh database with a unique name on its own client, dropped after the test."""
    async with cosmos_client(cosmos_emulator) as client:
        database = await client.create_database(f"db-{uuid.uuid4().hex}")
        try:
            yield database
        finally:
            await client.delete_database(database.id)


@pytest.fixture
async def cosmos_container(cosmos_database: Any) -> Any:
    """A fresh container partitioned by ``/pk`` in a fresh database."""
    from azure.cosmos import PartitionKey

    return await cosmos_database.create_container(
        f"c-{uuid.uuid4().hex}", partition_key=PartitionKey(path="/pk")
    )


# -- an opt-in real Azure Cosmos DB account ----------------------------------------------------

ACCOUNT_SETTINGS = {
    "CHECKFLOW_TEST_COSMOS_ENDPOINT": "the account endpoint (https://NAME.documents.azure.com)",
    "CHECKFLOW_TEST_COSMOS_KEY": "its key (the tests create and delete their own containers)",
    "CHECKFLOW_TEST_COSMOS_DATABASE": "the database to create them in (default checkflow-tests)",
}
"""Set the first two to run the storage and session-store contract suites against a real
account (the ``cosmos-account`` parameters); unset, those parameters are skipped."""


@pytest.fixture
async def cosmos_account_container() -> AsyncIterator[Any]:
    """A fresh container in a real Cosmos DB account, deleted after the test; skipped unless
    ``CHECKFLOW_TEST_COSMOS_ENDPOINT`` and ``CHECKFLOW_TEST_COSMOS_KEY`` are set."""
    endpoint = os.environ.get("CHECKFLOW_TEST_COSMOS_ENDPOINT")
    key = os.environ.get("CHECKFLOW_TEST_COSMOS_KEY")
    if not endpoint or not key:
        pytest.skip("no real Cosmos DB account: set CHECKFLOW_TEST_COSMOS_ENDPOINT and "
                    "CHECKFLOW_TEST_COSMOS_KEY to run this against one")
    from azure.cosmos import PartitionKey
    from azure.cosmos.aio import CosmosClient

    name = os.environ.get("CHECKFLOW_TEST_COSMOS_DATABASE") or "checkflow-tests"
    async with CosmosClient(endpoint, credential=key) as client:
        database = await client.create_database_if_not_exists(name)
        container = await database.create_container(
            f"c-{uuid.uuid4().hex}", partition_key=PartitionKey(path="/pk"))
        try:
            yield container
        finally:
            await database.delete_container(container.id)
