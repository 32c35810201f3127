"""docs/getting-started.md runs as written and prints what it says.

The page is executed top to bottom, as a reader in a fresh clone would:

- every ```sh block runs in one bash session (``set -e``; a variable or function one block
  defines is there for the next), in a folder that looks like a checkout (the page's own
  paths, ``samples/``, ``Makefile``, ... linked in), with stdin closed;
- a ```python block whose first line is ``# NAME`` is saved as ``NAME`` there first;
- a block that is only ``python -m checkflow serve ...`` is the reader's second terminal: it is
  started in the background (the server before it, if any, stopped with Ctrl-C's SIGINT), and
  its banner, the first lines of its stdout, is what the page shows; it is stopped at the end;
- the ```text block right after an ```sh block is its whole output, stdout and stderr as a
  terminal shows them, line by line; a block with none must print nothing. In it ``<id>``
  stands for one id (a uuid, a snapshot id, a hashed checkpoint id), ``<time>`` for an ISO
  timestamp and ``<loop>`` for the event loop the banner names;
- port 8000, the page's, is a free port the test chooses;
- ``INSTEAD`` lists the two install lines, which the test does not run: it already runs in
  the environment they build (it checks that the Makefile has the target).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "getting-started.md"
INSTEAD = {
    "make .venv/.installed": "make --dry-run .venv/.installed > /dev/null",
    ". .venv/bin/activate": ":",  # `python` is the test's own, first on PATH
}
PLACEHOLDERS = {
    "<id>": r"[\w-]+",
    "<time>": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z",
    "<loop>": r"uvloop|asyncio",
}
BLOCK_SECONDS = 60.0


@dataclass
class Block:
    lang: str
    text: str
    shown: str | None = None  # the ```text block that follows an sh block


def blocks(page: str) -> list[Block]:
    found = [Block(lang, text) for lang, text in re.findall(r"```(\w*)\n(.*?)```", page, re.S)]
    steps: list[Block] = []
    for block in found:
        if block.lang == "text" and steps and steps[-1].lang == "sh" and steps[-1].shown is None:
            steps[-1].shown = block.text
        else:
            steps.append(block)
    return steps


def serve_command(block: Block) -> str | None:
    lines = [line for line in block.text.splitlines() if line.strip()]
    if len(lines) == 1 and lines[0].startswith("python -m checkflow serve "):
        return lines[0]
    return None


def as_run(text: str) -> str:
    """The block as the test runs it: the ``INSTEAD`` lines replaced."""
    out = []
    for line in text.splitlines():
        command = re.sub(r"\s+#.*$", "", line).strip()
        out.append(INSTEAD.get(command, line))
    return "\n".join(out)


def compare(shown: str, printed: str, what: str) -> None:
    expected, got = shown.splitlines(), printed.splitlines()
    pattern = "|".join(re.escape(p) for p in PLACEHOLDERS)

    def matches(want: str, line: str) -> bool:
        parts = re.split(f"({pattern})", want)
        regex = "".join(f"(?:{PLACEHOLDERS[p]})" if p in PLACEHOLDERS else re.escape(p)
                        for p in parts)
        return re.fullmatch(regex, line) is not None

    ok = len(expected) == len(got) and all(map(matches, expected, got))
    assert ok, f"{what}\n--- the page shows:\n{shown}--- it printed:\n{printed}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Lines:
    """A pipe's lines, read by a thread so a wait can have a deadline."""

    def __init__(self, stream: object) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self._queue.put(line)
        self._queue.put(None)

    def until(self, done: object, what: str) -> tuple[list[str], bool]:
        """Lines up to the one ``done(line)`` accepts (not included), and whether one did
        (``False``: the stream ended first)."""
        lines: list[str] = []
        while True:
            try:
                line = self._queue.get(timeout=BLOCK_SECONDS)
            except queue.Empty:
                raise AssertionError(f"{what}: nothing more after {''.join(lines)!r}") from None
            if line is None:
                return lines, False
            if done(line):  # type: ignore[operator]
                return lines, True
            lines.append(line)


class Shell:
    """One bash session, as the reader's first terminal."""

    MARK = "--- checkflow getting-started: block done ---"

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], cwd=cwd, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines = Lines(self.process.stdout)
        self.run("set -e")

    def send(self, script: str) -> None:
        assert self.process.stdin is not None
        # a group, so bash reads the whole block before running it and no command reads it
        self.process.stdin.write(f"{{\n{script}\n}} < /dev/null\necho '{self.MARK}'\n")
        self.process.stdin.flush()

    def run(self, script: str) -> str:
        self.send(script)
        printed, finished = self.lines.until(lambda line: line.rstrip("\n") == self.MARK,
                                             script)
        if not finished:
            code = self.process.wait(timeout=BLOCK_SECONDS)
            raise AssertionError(f"the block failed (exit {code}):\n{script}\n"
                                 f"--- it printed:\n{''.join(printed)}")
        return "".join(printed)

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=BLOCK_SECONDS)


class Server:
    """The reader's second terminal: one ``serve`` command, its banner read."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str], log: Path) -> None:
        with log.open("a") as stderr:
            self.process = subprocess.Popen(
                ["bash", "-c", f"exec {command}"], cwd=cwd, env=env, text=True,
                stdout=subprocess.PIPE, stderr=stderr)
        self.lines = Lines(self.process.stdout)
        self.log = log

    def banner(self, count: int) -> str:
        """The first ``count`` lines the server prints (it prints them once it listens)."""
        seen: list[str] = []

        def last(line: str) -> bool:
            seen.append(line)
            return len(seen) == count

        _, complete = self.lines.until(last, "the server's banner")
        if not complete:
            raise AssertionError(f"the server stopped after {''.join(seen)!r}: "
                                 f"{self.log.read_text()[-3000:]}")
        return "".join(seen)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # Ctrl-C, as the page says
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def clone_entries() -> set[str]:
    """The top-level names a fresh clone has: what git tracks or would (not what it ignores)."""
    if shutil.which("git") and (ROOT / ".git").exists():
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                                cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return {line.split("/")[0] for line in listed.splitlines()
                if (ROOT / line.split("/")[0]).exists()}
    return {p.name for p in ROOT.iterdir()
            if not p.name.startswith(".") and p.name not in ("checkpoints", "state")}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder that looks like a fresh clone: the checkout's entries linked in."""
    folder = tmp_path / "checkflow"
    folder.mkdir()
    for name in clone_entries():
        (folder / name).symlink_to(ROOT / name)
    return folder


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def test_the_page_uses_the_readme_example() -> None:
    page = {b.text for b in blocks(PAGE.read_text(encoding="utf-8")) if b.lang == "python"}
    readme = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"),
                       re.S)
    assert readme is not None
    assert f"# review.py\n{readme.group(1)}" in page


def test_the_errors_the_page_names_exist() -> None:
    import checkflow

    named = set(re.findall(r"`(\w+Error)`", PAGE.read_text(encoding="utf-8")))
    assert named and all(hasattr(checkflow, name) for name in named), named


@pytest.mark.skipif(not (shutil.which("bash") and shutil.which("curl") and shutil.which("make")),
                    reason="the page's commands need bash, curl and make")
def test_the_getting_started_page_runs_as_written(
        checkout: Path, servers: list[Server], tmp_path: Path) -> None:
    port = str(free_port())
    page = PAGE.read_text(encoding="utf-8")
    page = page.replace("127.0.0.1:8000", f"127.0.0.1:{port}").replace(
        "--port 8000", f"--port {port}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHECKFLOW_")}
    env.update(PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    shell = Shell(checkout, env)
    saved = set()
    try:
        for block in blocks(page):
            if block.lang == "python":
                name = block.text.splitlines()[0].removeprefix("# ").strip()
                (checkout / name).write_text(block.text, encoding="utf-8")
                saved.add(name)
            elif block.lang == "sh" and (command := serve_command(block)):
                for server in servers:
                    server.stop()
                servers.append(Server(command, checkout, env, tmp_path / "server.log"))
                shown = block.shown or ""
                compare(shown, servers[-1].banner(len(shown.splitlines())), command)
            elif block.lang == "sh":
                compare(block.shown or "", shell.run(as_run(block.text)), block.text)
    finally:
        shell.close()
    assert servers, "the page serves nothing"
    assert INSTEAD.keys() <= {re.sub(r"\s+#.*$", "", line).strip()
                              for line in page.splitlines()}, "an INSTEAD line left the page"

    # what the commands wrote in the clone (the storages) is ignored by git
    written = {p.name for p in checkout.iterdir()} - clone_entries() - saved
    assert written == {"checkpoints", ".checkflow"}
    if shutil.which("git") and (ROOT / ".git").exists():
        for name in written:
            done = subprocess.run(["git", "check-ignore", "--quiet", "--no-index", f"{name}/x"],
                                  cwd=ROOT)
            assert done.returncode == 0, f"{name}/ is not in .gitignore"
