"""Run a sample as its docstring says: ``python samples/NAME.py``, in a fresh folder."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def run_sample(tmp_path: Path) -> Callable[..., str]:
    def run(name: str, **env: str) -> str:
        done = subprocess.run(
            [sys.executable, str(ROOT / "samples" / f"{name}.py")], cwd=tmp_path,
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env})
        assert done.returncode == 0, done.stderr
        return done.stdout
    return run
