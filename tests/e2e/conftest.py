"""Real servers for the end-to-end tests: ``python -m checkflow serve`` on loopback.

Each server is a separate process on port 0; its URL is read from the banner line it flushes
once the socket is bound. Gates are marker files in a folder shared with the server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


class Server:
    """One ``python -m checkflow serve`` process; ``url`` once it is listening.

    Its output is read for the process's whole life (so a chatty server never blocks on a
    full pipe); the banner is awaited with a generous deadline, and a server that exits or
    stays silent fails the test quoting what it said.
    """

    START_SECONDS = 120.0

    def __init__(self, target: str, storage: str, gates: Path, *extra: str,
                 preexec_fn: Callable[[], None] | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]),
               "CHECKFLOW_E2E_GATES": str(gates)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "checkflow", "serve", target, "--port", "0",
             "--storage", storage, *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO,
            preexec_fn=preexec_fn,
        )
        self.output: list[str] = []
        self._banner = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()
        self._banner.wait(self.START_SECONDS)
        banner = [line for line in self.output if " on http://" in line]
        if not banner:
            self.stop()
            said = "".join(self.output)[-4000:] or "nothing"
            raise RuntimeError(f"server {target} did not start; it said: {said}")
        self.url = banner[0].split(" on ", 1)[1].split()[0]

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:  # the banner is flushed once the socket is bound
            self.output.append(line)
            if " on http://" in line:
                self._banner.set()
        self._banner.set()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Gates:
    """Marker-file gates: wait until a held run entered, then release it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def wait_entered(self, name: str, deadline: float = 60.0) -> None:
        marker = self.folder / f"{name}.entered"
        end = time.monotonic() + deadline
        while not marker.exists():
            if time.monotonic() > end:
                raise TimeoutError(f"run {name!r} never reached its gate")
            time.sleep(0.005)

    def release(self, name: str) -> None:
        (self.folder / f"{name}.release").write_text("go")


@pytest.fixture
def gates(tmp_path: Path) -> Gates:
    folder = tmp_path / "gates"
    folder.mkdir()
    return Gates(folder)


@pytest.fixture
def start_server(tmp_path: Path, gates: Gates) -> Iterator[object]:
    """``start_server(target, storage=...)`` -> a running Server, stopped after the test."""
    servers: list[Server] = []

    def start(
        target: str = "e2e_flows:workflow", storage: str | None = None, *extra: str,
        preexec_fn: Callable[[], None] | None = None,
    ) -> Server:
        server = Server(target, storage or f"file:{tmp_path / 'store'}", gates.folder, *extra,
                        preexec_fn=preexec_fn)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(params=["JSONRPC", "HTTP+JSON"], ids=["jsonrpc", "rest"])
def binding(request: pytest.FixtureRequest) -> str:
    """An A2A protocol binding (the a2a-sdk's ``TransportProtocol`` values): both, in turn."""
    return str(request.param)


@pytest.fixture
async def connect(binding: str) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
    """``await connect(url, principal=None, *, streaming=False)`` -> an official a2a-sdk
    client on ``binding`` (with ``Bearer principal`` when given), closed after the test."""
    pytest.importorskip("a2a")
    import httpx
    from a2a.client import ClientConfig, ClientFactory

    opened: list[httpx.AsyncClient] = []

    async def make(url: str, principal: str | None = None, *, streaming: bool = False) -> Any:
        headers = {"authorization": f"Bearer {principal}"} if principal else {}
        http = httpx.AsyncClient(timeout=60, headers=headers)
        opened.append(http)
        return await ClientFactory(ClientConfig(
            httpx_client=http, streaming=streaming,
            supported_protocol_bindings=[binding])).create_from_url(url)

    yield make
    for http in opened:
        await http.aclose()
