"""Portability and packaging: ``import checkflow`` without ``fcntl``, the license, the pinned
tools, and ``httpx`` only in the extras whose code imports it."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_NO_FCNTL = """
import sys
sys.modules["fcntl"] = None  # as on a platform without it: importing it fails
import asyncio, checkflow, checkflow.hosting, checkflow.storage, checkflow.sessions
import checkflow.cli._main
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage
from checkflow.checkpoints import Checkpoint

STATE = {"workflow_state": {}, "executor_states": {}, "edge_states": {},
         "messages": {"input": [], "pending": {"messages": [], "requests": {}}, "output": []}}

async def main():
    memory = Checkpoint("c", workflow_name="w", graph_signature_hash="h",
                        checkpoint_storage=InMemoryCheckpointStorage())
    await memory.commit_snapshot(state=STATE, metadata={})  # the memory stores still work
    files = Checkpoint("c", workflow_name="w", graph_signature_hash="h",
                       checkpoint_storage=FileCheckpointStorage(sys.argv[1]))
    try:
        await files.commit_snapshot(state=STATE, metadata={})
    except NotImplementedError as exc:
        print("refused:", exc)

asyncio.run(main())
"""


def test_checkflow_imports_without_fcntl_and_the_file_stores_say_why_they_cannot_run(
    tmp_path: Path,
) -> None:
    done = subprocess.run([sys.executable, "-c", _NO_FCNTL, str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "refused: the file stores need fcntl" in done.stdout
    assert "memory: or cosmos:" in done.stdout


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_license_is_an_spdx_expression_with_its_file() -> None:
    project = _project()
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


def test_the_lint_and_type_tools_are_pinned_and_the_makefile_uses_the_pins() -> None:
    pins = dict(line.split("==") for line in (REPO / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    assert set(pins) >= {"ruff", "mypy"}
    assert "-c constraints.txt" in (REPO / "Makefile").read_text()
    assert "make test" in (REPO / ".ci" / "run").read_text()  # so CI installs with them too


def _imports_httpx(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "httpx"
                                                for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "httpx":
            return True
    return False


def test_httpx_is_required_only_by_the_extras_whose_code_imports_it() -> None:
    importers = {p.relative_to(REPO).as_posix() for p in (REPO / "checkflow").rglob("*.py")
                 if _imports_httpx(p)}
    assert importers == {"checkflow/agents/_openai.py", "checkflow/adapters/a2a/_deliver.py"}
    extras = _project()["optional-dependencies"]
    with_httpx = {name for name, deps in extras.items()
                  if any(d.startswith("httpx") for d in deps)}
    assert with_httpx == {"openai", "a2a", "dev"}


def test_the_hosting_extra_brings_the_loop_serve_runs_on_and_every_server_extra_takes_it(
) -> None:
    extras = _project()["optional-dependencies"]
    assert "uvloop>=0.19; sys_platform != 'win32'" in extras["hosting"]  # none for Windows
    for name in ("agui", "a2a", "foundry"):
        assert "checkflow[hosting]" in extras[name], name


def test_the_readme_documents_the_real_cosmos_account_settings() -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from cosmos_emulator import ACCOUNT_SETTINGS

    text = (REPO / "README.md").read_text()
    assert [name for name in ACCOUNT_SETTINGS if f"`{name}`" not in text] == []
