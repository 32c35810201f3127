"""Run a test helper module's ``main(argv)`` in a brand-new Python interpreter.

For tests that prove state survives a process restart: the child imports the helper module
from its own folder, ``tests/`` and the repository root, nothing else of the test process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def fresh_env(helper_file: str) -> dict[str, str]:
    """The environment a fresh interpreter needs to import ``helper_file``'s module."""
    tests = Path(__file__).resolve().parent
    paths = [Path(helper_file).resolve().parent, tests, tests.parent]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths))}


def main_command(helper_file: str, *argv: str) -> list[str]:
    """The command line that runs ``main(argv)`` of ``helper_file``'s module."""
    module = Path(helper_file).stem
    code = f"import sys, {module}; {module}.main(sys.argv[1:])"
    return [sys.executable, "-c", code, *argv]


def run_main(helper_file: str, *argv: str) -> str:
    """Run ``main(argv)`` of ``helper_file``'s module to completion; its stdout."""
    done = subprocess.run(
        main_command(helper_file, *argv),
        env=fresh_env(helper_file),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def run_code(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (this environment); its outcome, never raising."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
