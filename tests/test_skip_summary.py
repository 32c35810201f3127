"""The summary groups skips by reason (tests/skip_summary.py) and still lists each failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

_SUITE = '''
import pytest

@pytest.mark.parametrize("n", range(3))
def test_needs_an_account(n):
    pytest.skip("no account")

@pytest.mark.skip(reason="not on this platform")
def test_platform():
    pass

@pytest.mark.xfail(reason="known bug")
def test_known():
    assert False

def test_fails():
    assert False
'''


def _pytest(tmp_path: Path, *options: str) -> str:
    (tmp_path / "test_suite.py").write_text(_SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not this repository's settings
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "skip_summary", "-p", "no:cacheprovider",
         *options, str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env={**env, "PYTHONPATH": str(TESTS)})
    assert done.returncode == 1, done.stdout + done.stderr  # the one failure
    return done.stdout


def test_skips_are_one_line_per_reason_with_a_count_and_failures_stay_listed(
    tmp_path: Path,
) -> None:
    out = _pytest(tmp_path, "-rfEX").splitlines()
    assert "SKIPPED    3 x no account" in out and "SKIPPED    1 x not on this platform" in out
    assert "XFAIL    1 x known bug" in out
    assert [line for line in out if line.startswith("SKIPPED [")] == []
    assert "FAILED test_suite.py::test_fails - assert False" in out
    assert out[-1].startswith("=") and "1 failed" in out[-1] and "4 skipped" in out[-1]


def test_asking_for_skips_by_test_gives_pytest_s_own_lines_instead(tmp_path: Path) -> None:
    out = _pytest(tmp_path, "-ra")
    assert "by reason" not in out
    assert out.count("SKIPPED [") == 2  # pytest folds the three identical skips into one
