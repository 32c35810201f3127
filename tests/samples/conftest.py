"""Run a sample as its docstring says, ``python samples/NAME.py``, twice in one fresh folder.

A sample must survive being run again where it ran before (the folder then holds the first
run's checkpoints), so every test gets both runs' output and what the first run left behind;
whatever it leaves must be ignored by git when it is run from the repository's root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class SampleRuns:
    """Two runs of one sample in one folder."""

    first: str
    second: str
    left: frozenset[str]
    """The files (relative paths) in the folder after the first run, before the second."""

    @property
    def folders(self) -> set[str]:
        """The top-level folders the first run wrote."""
        return {Path(p).parts[0] for p in self.left}


def list_files(root: Path) -> frozenset[str]:
    return frozenset(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def ignored_by_git(path: str) -> bool | None:
    """Whether the repository's .gitignore ignores ``path`` (None: no git checkout here)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    done = subprocess.run(["git", "check-ignore", "--quiet", "--no-index", path], cwd=ROOT)
    assert done.returncode in (0, 1), f"git check-ignore {path}: exit {done.returncode}"
    return done.returncode == 0


@pytest.fixture
def git_ignores() -> Callable[[str], bool | None]:
    """``ignored_by_git`` (a fixture, for the tests beside this file)."""
    return ignored_by_git


@pytest.fixture
def run_sample(tmp_path: Path) -> Callable[..., SampleRuns]:
    def once(name: str, env: dict[str, str]) -> str:
        done = subprocess.run(
            [sys.executable, str(ROOT / "samples" / f"{name}.py")], cwd=tmp_path,
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env})
        assert done.returncode == 0, done.stderr
        return done.stdout

    def run(name: str, **env: str) -> SampleRuns:
        first = once(name, env)
        runs = SampleRuns(first, "", list_files(tmp_path))
        for folder in runs.folders:
            assert ignored_by_git(f"{folder}/x") is not False, f"{folder}/ is not in .gitignore"
        return SampleRuns(first, once(name, env), runs.left)
    return run
