"""The DESIGN.md section-0 example runs as written, in a fresh interpreter."""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_the_design_example_runs_as_written(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[1])}
    done = subprocess.run(
        [sys.executable, str(HERE / "design_example.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert (tmp_path / "checkpoints").is_dir()
