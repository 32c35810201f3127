"""The container recipe: the repository's ``Dockerfile`` built without Docker, then used.

There is no Docker engine here, so the test does what the Dockerfile does, read from the
Dockerfile itself so the two cannot drift: it copies what the ``COPY`` lines copy into a
fresh folder (the ``WORKDIR``), makes a fresh venv, runs the ``RUN pip install`` line there
with its pip, and starts the ``CMD`` with that venv's python, ``PORT`` from ``ENV`` replaced by
a free loopback port and the container's ``/data`` volume by a folder of the test. The
``openai`` client then creates a response and answers its approval request.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from foundry_schema import validate_response
from openai import OpenAI

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = REPO / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, ``(KEYWORD, arguments)``, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def _one(keyword: str) -> str:
    values = [rest for kw, rest in _instructions() if kw == keyword]
    assert len(values) == 1, (keyword, values)
    return values[0]


def test_the_dockerfile_is_slim_non_root_the_foundry_extra_and_serve_foundry_on_8088() -> None:
    assert re.fullmatch(r"python:3\.\d+-slim", _one("FROM"))
    user = _one("USER")
    assert user not in ("root", "0")
    assert any(kw == "RUN" and "useradd" in rest and user in rest
               for kw, rest in _instructions())
    (install,) = [rest for kw, rest in _instructions() if kw == "RUN" and "pip install" in rest]
    assert shlex.split(install) == ["pip", "install", ".[foundry]"]
    command = json.loads(_one("CMD"))
    assert command[:3] == ["python", "-m", "checkflow"] and "serve" in command
    assert "--foundry" in command
    assert _one("EXPOSE") == "8088" and "PORT=8088" in _one("ENV").split()
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv", ".git", "tests"} <= set(ignored)


def _build(app: Path) -> Path:
    """Copy what the Dockerfile copies into ``app``, make a venv, run its pip install line;
    the venv's python."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for keyword, rest in _instructions():
        if keyword != "COPY":
            continue
        *sources, destination = [a for a in shlex.split(rest) if not a.startswith("--")]
        for source in sources:
            origin, target = REPO / source, app / destination
            if origin.is_dir():
                shutil.copytree(origin, target if len(sources) == 1 else target / source,
                                ignore=ignore)
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target / Path(source).name)
    venv = app.parent / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    (install,) = [rest for kw, rest in _instructions() if kw == "RUN" and "pip install" in rest]
    argv = shlex.split(install)
    assert argv[0] == "pip"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *argv[1:]], cwd=app,
                   check=True, env={k: v for k, v in os.environ.items()
                                    if k not in ("PYTHONPATH", "VIRTUAL_ENV")})
    return python


@pytest.mark.slow
def test_the_images_command_serves_a_foundry_agent_built_as_the_dockerfile_builds_it(
    tmp_path: Path,
) -> None:
    app = tmp_path / _one("WORKDIR").lstrip("/")
    app.mkdir(parents=True)
    python = _build(app)
    with socket.socket() as probe:  # a port free a moment ago: the server takes it next
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = tmp_path / "data"
    command = [str(python) if part == "python" else part.replace("file:/data", f"file:{data}")
               for part in json.loads(_one("CMD"))]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PORT=str(port), FOUNDRY_AGENT_NAME="publisher", FOUNDRY_AGENT_VERSION="1")
    process = subprocess.Popen(command, cwd=app, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert f":{port} " in banner, banner + process.stdout.read()
        url = f"http://127.0.0.1:{port}"
        ready = httpx.get(f"{url}/readiness", timeout=60)
        assert (ready.status_code, ready.json()) == (200, {"status": "healthy"})
        assert httpx.get(f"{url}/v1/conversations/x", timeout=60).status_code == 404
        client = OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=60,
                        default_headers={"x-agent-user-id": "u1"})
        paused = _body(client.responses.with_raw_response.create(
            input="owls", extra_body={"agent_session_id": "s-1"}))
        assert paused["agent_reference"] == {"type": "agent_reference", "name": "publisher",
                                             "version": "1"}
        (ask,) = [i for i in paused["output"] if i["type"] == "mcp_approval_request"]
        done = _body(client.responses.with_raw_response.create(
            previous_response_id=paused["id"],
            input=[{"type": "mcp_approval_response", "approval_request_id": ask["id"],
                    "approve": True}]))
        assert done["output"][0]["content"][0]["text"].startswith("published: ")
        assert done["agent_session_id"] == "s-1"
        assert any(data.rglob("*")), "the conversation was stored in the data volume"
    finally:
        process.terminate()
        process.wait(30)


def _body(raw: Any) -> dict[str, Any]:
    body: dict[str, Any] = raw.http_response.json()
    validate_response(body)
    return body
