"""The README's tour is a program: it must run as written, in a fresh interpreter, and again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", readme, re.S)
    assert match is not None, "README.md has no python example"
    return match.group(1)


def run(script: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_readme_example_is_about_20_lines() -> None:
    assert len(readme_example().strip().splitlines()) <= 24


def test_readme_tour_runs_as_written_and_again_in_the_same_folder(tmp_path: Path) -> None:
    script = tmp_path / "tour.py"
    script.write_text(readme_example(), encoding="utf-8")

    assert run(script) == "['published: Owls are great.']\n"
    first = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert len(first) == 1  # the first run's checkpoint is there when the second starts

    assert run(script) == "['published: Owls are great.']\n"
    second = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert len(second) == 2 and set(first) < set(second)  # a new checkpoint beside it
