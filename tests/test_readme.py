"""The README's tour is a program: it must run as written, in a fresh interpreter."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_tour_runs_as_written(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", readme, re.S)
    assert match is not None, "README.md has no python example"
    script = tmp_path / "tour.py"
    script.write_text(match.group(1), encoding="utf-8")

    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "checkpoints").is_dir()
