"""``serve`` as a stranger meets it: the environment, a port in use, a missing extra, the
version, ``make serve``, and connections bounded by the protocol ``serve`` configures."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from hosting_flows import build

from checkflow.cli import main
from checkflow.cli._main import _parser
from checkflow.cli._serve import _listening, server_config
from checkflow.cli._serve_options import ENVIRONMENT, ServeOptions, serve_options
from checkflow.hosting import WorkflowHost, create_app

REPO = Path(__file__).resolve().parents[2]


def options(argv: list[str], env: dict[str, str]) -> ServeOptions:
    return serve_options(_parser().parse_args(["serve", "hosting_flows:build", *argv]), env)


def test_the_environment_configures_serve_and_flags_win() -> None:
    env = {"CHECKFLOW_HOST": "0.0.0.0", "CHECKFLOW_PORT": "9001",
           "CHECKFLOW_ADAPTERS": "native, agui", "CHECKFLOW_AUTHENTICATE": "m:auth"}
    from_env = options([], env)
    assert (from_env.host, from_env.port, from_env.adapters, from_env.authenticate) == (
        "0.0.0.0", 9001, ("native", "agui"), "m:auth")
    flags = options(["--host", "::1", "--port", "7", "--adapters", "native",
                     "--authenticate", "x:y"], env)
    assert (flags.host, flags.port, flags.adapters, flags.authenticate) == (
        "::1", 7, ("native",), "x:y")
    default = options([], {})
    assert (default.host, default.port, default.adapters, default.authenticate) == (
        "127.0.0.1", 8000, ("native",), None)
    assert options(["--foundry"], {"PORT": "8123"}).port == 8123


def test_the_storage_variable_is_every_commands_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CHECKFLOW_STORAGE", f"file:{tmp_path}")
    assert _parser().parse_args(["checkpoints", "ls"]).storage == f"file:{tmp_path}"
    assert _parser().parse_args(["serve", "m:a"]).storage == f"file:{tmp_path}"
    assert _parser().parse_args(["serve", "m:a", "--storage", "memory:"]).storage == "memory:"


@pytest.mark.parametrize(("env", "said"), [
    ({"CHECKFLOW_PORT": "eighty"}, "CHECKFLOW_PORT"),
    ({"CHECKFLOW_PORT": "70000"}, "70000"),
])
def test_a_bad_variable_exits_2_naming_it(
    env: dict[str, str], said: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["serve", "hosting_flows:build"]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--lease-seconds", "--shutdown-timeout", "--header-timeout",
                                  "--keep-alive-timeout", "--limit-concurrency"])
def test_a_bound_must_be_positive(flag: str, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "hosting_flows:build", flag, "0"])
    assert exited.value.code == 2
    assert flag in capsys.readouterr().err


def test_the_readme_documents_every_variable_and_serve_flag() -> None:
    text = (REPO / "README.md").read_text()
    assert [name for name in ENVIRONMENT if f"`{name}`" not in text] == []
    for flag in ("--lease-seconds", "--shutdown-timeout", "--header-timeout",
                 "--keep-alive-timeout", "--limit-concurrency", "--max-header-bytes"):
        assert f"`{flag}" in text, flag


def test_a_port_in_use_is_one_line_and_exit_2(capsys: Any) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "hosting_flows:build", "--storage", "memory:",
                     "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in err
    assert "Traceback" not in err


def test_serve_without_the_hosting_extra_names_the_extra() -> None:
    code = ("import sys; sys.modules['uvicorn'] = None\n"
            "from checkflow.cli import main\n"
            "sys.exit(main(['serve', 'hosting_flows:build', '--port', '0']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=REPO / "tests" / "hosting",
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2, done.stderr
    assert "pip install 'checkflow[hosting]'" in done.stderr and "Traceback" not in done.stderr


def test_version(capsys: Any) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"checkflow {version('checkflow')}"


def test_help_is_plain_text_and_names_the_cosmos_settings_once(capsys: Any) -> None:
    texts = {}
    for argv in (["--help"], ["serve", "--help"], ["checkpoints", "ls", "--help"],
                 ["checkpoints", "tree", "--help"], ["conversations", "unlock", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        texts[" ".join(argv)] = capsys.readouterr().out
    assert [a for a, text in texts.items() if "`" in text] == []
    assert "CHECKFLOW_COSMOS_KEY" in texts["--help"] and "CHECKFLOW_PORT" in texts["--help"]
    assert [a for a, t in texts.items() if "CHECKFLOW_COSMOS_KEY" in t] == ["--help"]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_serve_takes_host_and_port() -> None:
    done = subprocess.run(["make", "-n", "serve", "HOST=0.0.0.0", "PORT=9123"], cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=True)
    (line,) = [x for x in done.stdout.splitlines() if "checkflow serve" in x]
    assert line.endswith("--host 0.0.0.0 --port 9123")


# -- connections bounded by the configuration ``serve`` builds ------------------------------


@contextlib.asynccontextmanager
async def bounded(**bounds: Any) -> AsyncIterator[tuple[str, int]]:
    """The app served with ``serve``'s uvicorn configuration and ``bounds``; (host, port)."""
    settings = options([], {})
    settings = ServeOptions(**{**{f: getattr(settings, f) for f in settings.__slots__},
                               **bounds})
    server = uvicorn.Server(server_config(create_app(WorkflowHost(build())), settings))
    with _listening("127.0.0.1", 0) as sock:
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        try:
            for _ in range(1000):
                if server.started or task.done():
                    break
                await asyncio.sleep(0.01)
            assert server.started
            yield "127.0.0.1", sock.getsockname()[1]
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, 30)


async def test_a_connection_that_never_finishes_its_head_is_closed() -> None:
    async with bounded(header_timeout=0.3, keep_alive_timeout=30.0) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")  # no blank line: never done
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 10) == b""  # closed by the server
        writer.close()
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
            assert (await client.get("/healthz")).status_code == 200  # whole heads are served


async def test_each_response_gives_the_next_head_the_whole_header_timeout() -> None:
    # The connection lives past its first deadline (opened + 1 s) while requests keep coming;
    # the last response starts the last deadline, which a head that never ends then meets.
    async with bounded(header_timeout=1.0, keep_alive_timeout=30.0) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        loop = asyncio.get_running_loop()
        opened = loop.time()
        while loop.time() - opened < 1.6:
            writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            assert head.startswith(b"HTTP/1.1 200")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await asyncio.wait_for(reader.readexactly(length), 10)
            await asyncio.sleep(0.3)  # pacing past the first deadline, not an overlap
        answered = loop.time()
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")  # no blank line: never done
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 10) == b""  # closed by the server
        assert loop.time() - answered >= 0.5  # by the deadline the last response started
        writer.close()


async def test_an_idle_keep_alive_connection_is_closed() -> None:
    async with bounded(keep_alive_timeout=1.0) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        await writer.drain()
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).startswith(
            b"HTTP/1.1 200")
        await asyncio.wait_for(reader.read(), 10)  # the body, then EOF when idle
        assert reader.at_eof()
        writer.close()


async def test_connections_beyond_the_limit_get_503() -> None:
    async with bounded(limit_concurrency=3, header_timeout=30.0) as (host, port):
        idle = [await asyncio.open_connection(host, port) for _ in range(3)]
        try:
            async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
                assert (await client.get("/healthz")).status_code == 503
        finally:
            for _, writer in idle:
                writer.close()
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
            for _ in range(100):  # the server sees the closes asynchronously
                if (await client.get("/healthz")).status_code == 200:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the limit never freed up")


async def test_a_request_head_growing_over_the_limit_is_refused() -> None:
    async with bounded(max_header_bytes=4096) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 8192)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
        assert answer.split(b"\r\n", 1)[0] in (b"HTTP/1.1 400 Bad Request",
                                                 b"HTTP/1.1 431 Request Header Fields Too Large")
        writer.close()
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
            assert (await client.get("/healthz")).status_code == 200


def test_the_default_limit_fits_the_descriptor_limit_and_a_given_one_is_lowered_aloud(
    capsys: Any,
) -> None:
    import resource

    from checkflow.cli._connections import within_descriptor_limit

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 1024:
        pytest.skip(f"this shell's descriptor limit is {soft}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    room = (1024 - 32) // 4
    try:
        assert within_descriptor_limit(options([], {})).limit_concurrency == room
        assert capsys.readouterr().err == ""  # the default fits quietly
        kept = within_descriptor_limit(options(["--limit-concurrency", "50"], {}))
        assert kept.limit_concurrency == 50 and capsys.readouterr().err == ""
        lowered = within_descriptor_limit(options(["--limit-concurrency", "5000"], {}))
        assert lowered.limit_concurrency == room
        assert "lowered from 5000" in capsys.readouterr().err
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    unbounded = within_descriptor_limit(options([], {}))
    assert unbounded.limit_concurrency == min(1000, max(1, (soft - 32) // 4))
