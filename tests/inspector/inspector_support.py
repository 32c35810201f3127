"""What the inspector's browser tests share: real servers on loopback, the page's error log.

A server is ``python -m checkflow serve ... --inspector`` (or ``checkflow inspect --storage``),
a separate process on port 0 whose URL is read from the banner line it flushes once the
socket is bound, like the end-to-end servers (tests/e2e/conftest.py). Gates are marker files
in a folder shared with the server (tests/e2e/e2e_flows.py's ``hold:<name>``).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

try:
    from playwright.async_api import expect
except ImportError:  # the browser fixture skips (or fails) naming what is missing
    expect = None

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
E2E = REPO / "tests" / "e2e"
# where each test's screenshot is saved (gitignored)
SCREENSHOTS = REPO / "test-output" / "inspector"
# generous: the machine running CI has two shared cores
TIMEOUT_MS = 20_000
# the line a server flushes once its socket is bound
_BANNER = re.compile(r" (?:on|at) (http://\S+)")


class Process:
    """One checkflow server process; ``url`` once it is listening.

    Its output is read for the process's whole life (a chatty server never blocks on a full
    pipe); the banner is awaited with a generous deadline, and a server that exits or stays
    silent fails the test quoting what it said.
    """

    START_SECONDS = 120.0

    def __init__(self, argv: list[str], gates: Path) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(E2E), str(REPO)]),
               "CHECKFLOW_E2E_GATES": str(gates)}
        self.argv = argv
        self.process = subprocess.Popen(
            [sys.executable, "-m", "checkflow", *argv],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO,
        )
        self.output: list[str] = []
        self._banner = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()
        self._banner.wait(self.START_SECONDS)
        banner = [found for line in self.output if (found := _BANNER.search(line))]
        if not banner:
            self.stop()
            said = "".join(self.output)[-4000:] or "nothing"
            raise RuntimeError(f"`checkflow {' '.join(argv)}` did not start; it said: {said}")
        # serve: "... on http://HOST:PORT ..."; inspect: "... at http://HOST:PORT/inspector/"
        self.url = banner[0].group(1).rstrip("/").removesuffix("/inspector")

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:  # the banner is flushed once the socket is bound
            self.output.append(line)
            if _BANNER.search(line):
                self._banner.set()
        self._banner.set()

    @property
    def inspector(self) -> str:
        return f"{self.url}/inspector/"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Servers:
    """The processes a test starts; ``stop()`` ends each (by its own handle)."""

    def __init__(self, store: Path, gates: Path) -> None:
        self.store, self.gates = store, gates
        self.started: list[Process] = []

    @property
    def storage(self) -> str:
        return f"file:{self.store}"

    def serve(self, target: str, *extra: str, storage: str | None = None) -> Process:
        """``checkflow serve target --inspector *extra`` on 127.0.0.1, port 0."""
        return self.run("serve", target, "--host", "127.0.0.1", "--port", "0",
                        "--storage", storage or self.storage, "--inspector", *extra)

    def run(self, *argv: str) -> Process:
        """``checkflow *argv`` (another subcommand: ``inspect --storage ...``)."""
        process = Process(list(argv), self.gates)
        self.started.append(process)
        return process

    def stop(self) -> None:
        for process in self.started:
            process.stop()


class Gates:
    """Marker-file gates: wait (without blocking the loop) until a held run entered, release."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def wait_entered(self, name: str, deadline: float = 60.0) -> None:
        marker = self.folder / f"{name}.entered"
        end = time.monotonic() + deadline
        while not marker.exists():  # polled: the server process writes it
            if time.monotonic() > end:
                raise TimeoutError(f"run {name!r} never reached its gate")
            await asyncio.sleep(0.01)

    def release(self, name: str) -> None:
        (self.folder / f"{name}.release").write_text("go")


@dataclass
class BrowserLog:
    """The page's console errors and uncaught exceptions (CSP violations are console errors).

    A test that provokes some (a 401 before the token is entered, a 404 it opens on purpose)
    says so with ``expect(pattern)``; any other entry fails the test.
    """

    errors: list[str] = field(default_factory=list)
    expected: list[re.Pattern[str]] = field(default_factory=list)

    def expect(self, pattern: str) -> None:
        self.expected.append(re.compile(pattern))

    def unexpected(self) -> list[str]:
        return [error for error in self.errors
                if not any(pattern.search(error) for pattern in self.expected)]


def screenshot_path(test_name: str) -> Path:
    return SCREENSHOTS / (re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name).strip("_") + ".png")


# -- the pages and the API, as the tests use them ---------------------------------------------


def encode(value: str) -> str:
    """``encodeURIComponent``: what the pages do to an id in a hash route or an API path."""
    return urllib.parse.quote(value, safe="!*'()")


def conversation_url(server: Process, conversation_id: str, snapshot_id: str | None = None,
                     principal: str | None = None) -> str:
    """The conversation's page: ``#/c/<id>[/s/<snapshot id>][?principal=P]``."""
    route = f"#/c/{encode(conversation_id)}"
    if snapshot_id is not None:
        route += f"/s/{encode(snapshot_id)}"
    if principal is not None:
        route += f"?principal={encode(principal)}"
    return server.inspector + route


def bearer(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


async def native_run(server: Process, conversation_id: str, body: dict[str, Any],
                     token: str | None = None) -> dict[str, Any]:
    """``POST /v1/conversations/{id}/runs``, the way any client would: the answer's JSON."""
    async with httpx.AsyncClient(timeout=120, headers=bearer(token)) as http:
        response = await http.post(
            f"{server.url}/v1/conversations/{encode(conversation_id)}/runs", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def inspector_api(server: Process, path: str, token: str | None = None) -> Any:
    """A read of the inspector's API (``conversations/<id>``, ``meta``, ...): its JSON."""
    async with httpx.AsyncClient(timeout=60, headers=bearer(token)) as http:
        response = await http.get(f"{server.inspector}api/{path}")
    assert response.status_code == 200, response.text
    return response.json()


async def detail(server: Process, conversation_id: str, token: str | None = None) -> Any:
    return await inspector_api(server, f"conversations/{encode(conversation_id)}", token)
