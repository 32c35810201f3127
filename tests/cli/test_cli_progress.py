"""The progress line of long commands: drawn on a terminal's stderr, absent from a pipe, and
silenced by ``--quiet``; the commands run in their own process, stderr on a real pseudo
terminal (``os.openpty``) or a pipe, as a person's shell or a script would run them."""

from __future__ import annotations

import asyncio
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from checkflow.checkpoints import Checkpoint
from checkflow.cli._progress import Progress
from checkflow.storage import FileCheckpointStorage

ROOT = Path(__file__).resolve().parents[2]
V1_FILES = ROOT / "tests" / "fixtures" / "v1" / "linear"
ORPHAN = "conversation-" + "0" * 32 + "-g0"  # a host's checkpoint id no session names

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo terminal")


def _state(step: int) -> dict[str, object]:
    return {"workflow_state": {"status": "idle", "superstep": step}, "executor_states": {},
            "edge_states": {}, "messages": {"input": [], "pending": {}, "output": [step]}}


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """file: storage holding "cp" (five snapshots) and an orphan host checkpoint."""
    root = tmp_path_factory.mktemp("store")

    async def fill() -> None:
        checkpoints = FileCheckpointStorage(root / "checkpoints")
        for checkpoint_id, count in (("cp", 5), (ORPHAN, 1)):
            checkpoint = Checkpoint(checkpoint_id, workflow_name="w", graph_signature_hash="h",
                                    checkpoint_storage=checkpoints)
            for step in range(count):
                await checkpoint.commit_snapshot(state=_state(step))

    asyncio.run(fill())
    return root


def _command(*argv: str) -> list[str]:
    return [sys.executable, "-m", "checkflow", *argv]


def run_with_terminal_stderr(argv: list[str], tmp_path: Path, *, stdout_too: bool = False
                             ) -> tuple[int, str]:
    """Run the command with stderr (and with ``stdout_too`` stdout) on a pseudo terminal;
    its exit status and what reached the terminal."""
    primary, secondary = os.openpty()
    with (tmp_path / "stdout").open("wb") as out:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, cwd=ROOT, stderr=secondary,
                                 stdout=secondary if stdout_too else out)
    os.close(secondary)
    drawn = bytearray()
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:  # EIO: the child, the terminal's last writer, has gone
            break
        if not data:
            break
        drawn += data
    os.close(primary)
    return child.wait(timeout=120), drawn.decode()


def _commands(storage: Path, tmp_path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """Each long command, and the stage lines it must end with on a terminal."""
    url = f"file:{storage}"
    return {
        "export": (_command("checkpoints", "export", "cp", "--storage", url),
                   ["reading snapshots: 5/5", "writing parts and snapshots: "]),
        "verify": (_command("checkpoints", "verify", "--storage", url),
                   ["verifying checkpoints: 2/2"]),
        "prune --orphans": (_command("checkpoints", "prune", "--orphans", "--dry-run",
                                     "--storage", url),
                            ["checking checkpoints: 2/2"]),
        "migrate-v1": (_command("migrate-v1", str(V1_FILES), "--to",
                                f"file:{tmp_path / 'v2'}"),
                       ["reading v1 files: 4/4", "writing snapshots: 4/4"]),
    }


@pytest.mark.parametrize("name", ["export", "verify", "prune --orphans", "migrate-v1"])
def test_a_long_command_draws_its_progress_on_a_terminal(
    name: str, storage: Path, tmp_path: Path
) -> None:
    argv, stages = _commands(storage, tmp_path)[name]
    status, drawn = run_with_terminal_stderr(argv, tmp_path)
    assert status == 0, drawn
    for stage in stages:
        assert re.search(re.escape(stage) + r"[\d/]* \([\d.k]+/s\)\x1b\[K, done\.", drawn), drawn
    assert "\r" in drawn  # redrawn in place


@pytest.mark.parametrize("name", ["export", "verify", "prune --orphans", "migrate-v1"])
def test_quiet_silences_the_progress_line(name: str, storage: Path, tmp_path: Path) -> None:
    argv, _stages = _commands(storage, tmp_path)[name]
    status, drawn = run_with_terminal_stderr([*argv, "--quiet"], tmp_path)
    assert (status, drawn) == (0, "")


@pytest.mark.parametrize("name", ["export", "verify", "prune --orphans", "migrate-v1"])
def test_no_progress_reaches_a_pipe(name: str, storage: Path, tmp_path: Path) -> None:
    argv, _stages = _commands(storage, tmp_path)[name]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout  # the command's own output is all there is


def test_export_to_the_terminal_itself_draws_no_progress_into_the_document(
    storage: Path, tmp_path: Path
) -> None:
    argv = _command("checkpoints", "export", "cp", "--storage", f"file:{storage}")
    status, shown = run_with_terminal_stderr(argv, tmp_path, stdout_too=True)
    assert status == 0 and '"format": "checkflow.export"' in shown
    assert "snapshots: " not in shown and "\x1b[K" not in shown


def test_the_result_follows_the_finished_progress_line_on_a_line_of_its_own(
    storage: Path, tmp_path: Path
) -> None:
    argv = _command("checkpoints", "prune", "--orphans", "--dry-run", "--storage",
                    f"file:{storage}")
    status, shown = run_with_terminal_stderr(argv, tmp_path, stdout_too=True)
    assert status == 0
    assert re.search(r", done\.\r\nwould remove 1 orphan checkpoint\(s\)\r\n  " + ORPHAN, shown)


def test_prune_orphans_counts_the_orphans_it_deletes(tmp_path: Path) -> None:
    async def one_orphan() -> None:
        checkpoint = Checkpoint(ORPHAN, checkpoint_storage=FileCheckpointStorage(
            tmp_path / "checkpoints"))
        await checkpoint.commit_snapshot(state=_state(0))

    asyncio.run(one_orphan())
    status, drawn = run_with_terminal_stderr(
        _command("checkpoints", "prune", "--orphans", "--storage", f"file:{tmp_path}"),
        tmp_path)
    assert status == 0 and "deleting orphans: 1/1" in drawn and ", done." in drawn


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_is_redrawn_at_most_once_an_interval_and_always_at_the_end() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, interval=0.1, clock=clock)
    progress("copying", 0, 3)
    clock.now += 0.01
    progress("copying", 1, 3)  # too soon: not drawn
    assert out.getvalue() == "\rcopying: 0/3\x1b[K"
    clock.now += 0.2
    progress("copying", 2, 3)
    clock.now += 0.01
    progress("copying", 3, 3)  # the last item is always drawn
    progress.close()
    lines = out.getvalue().split("\r")[1:]
    assert lines[1:] == ["copying: 2/3 (9.5/s)\x1b[K", "copying: 3/3 (14/s)\x1b[K",
                         "copying: 3/3 (14/s)\x1b[K, done.\n"]


def test_a_new_stage_ends_the_line_of_the_last_and_an_unfinished_one_ends_without_done() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, clock=clock)
    progress("reading", 2, 2)
    progress("writing", 0, 5)
    progress.close()
    assert out.getvalue().endswith("\rreading: 2/2\x1b[K, done.\n\rwriting: 0/5\x1b[K"
                                   "\rwriting: 0/5\x1b[K\n")


def test_without_a_stream_nothing_is_drawn() -> None:
    progress = Progress(None)
    progress("reading", 1, 2)
    progress.close()
    assert not progress.shown
