"""The command line's own surface: every ``--help`` lists its choices, an unknown flag is named
with the subcommand it was given to (exit 2), and output into a closed pipe ends quietly."""

from __future__ import annotations

import argparse
import asyncio
import os
import pkgutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import checkflow.adapters
from checkflow.checkpoints import Checkpoint
from checkflow.cli import main
from checkflow.cli._main import _parser, leaf_parsers
from checkflow.storage import FileCheckpointStorage

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [path for path, _parser_ in leaf_parsers(_parser())]


def _help(path: tuple[str, ...]) -> str:
    (leaf,) = [p for found, p in leaf_parsers(_parser()) if found == path]
    return leaf.format_help()


def test_every_command_is_reached() -> None:
    assert {" ".join(p) for p in COMMANDS} == {
        "serve", "inspect", "migrate-v1",
        *(f"checkpoints {a}" for a in ("ls", "show", "tree", "pending", "prune", "export",
                                       "verify")),
        *(f"conversations {a}" for a in ("ls", "show", "unlock", "recover"))}


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_an_unknown_flag_is_named_with_its_subcommand(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    needed = {("serve",): ["m:a"], ("migrate-v1",): ["v1", "--to", "memory:"],
              ("inspect",): []}.get(path)
    if needed is None:
        needed = [] if path[-1] in ("ls", "prune", "verify") else ["x"]
    with pytest.raises(SystemExit) as exited:  # refused while parsing: nothing is opened
        main([*path, *needed, "--foo"])
    assert exited.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == f"checkflow {' '.join(path)}: error: unrecognized arguments: --foo"


def test_an_unknown_command_is_named_with_the_commands_there_are(
    capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["checkpoints", "lss"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "checkflow checkpoints: error: argument ACTION: invalid choice: 'lss'" in err
    assert "'ls'" in err


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_choice_is_listed_in_the_help(path: tuple[str, ...]) -> None:
    (leaf,) = [p for found, p in leaf_parsers(_parser()) if found == path]
    text = " ".join(leaf.format_help().split())
    for action in leaf._actions:
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            assert "{" + ",".join(map(str, action.choices)) + "}" in text, action.dest
    if any("--storage" in a.option_strings or "--to" in a.option_strings
           for a in leaf._actions):
        assert "memory:, file:PATH or cosmos:" in text


def test_serve_help_names_every_adapter_the_loops_and_the_disconnect_policies() -> None:
    text = " ".join(_help(("serve",)).split())
    adapters = [m.name for m in pkgutil.iter_modules(checkflow.adapters.__path__)]
    assert adapters and "native" in text
    for name in adapters:
        assert name in text
    assert "{auto,asyncio,uvloop}" in text and "{cancel,continue}" in text
    assert "--public-url URL" in text


def test_every_command_taking_an_id_explains_what_the_id_names() -> None:
    for path in COMMANDS:
        if path[0] == "checkpoints" and path[1] != "ls":
            text = " ".join(_help(path).split())
            assert "--principal P" in text
            assert "without it, the checkpoint ID if the storage has one, else the " \
                   "conversation ID of no principal" in text


@pytest.fixture
def storage_url(tmp_path: Path) -> str:
    async def fill() -> None:
        checkpoints = FileCheckpointStorage(tmp_path / "checkpoints")
        for n in range(3):
            checkpoint = Checkpoint(f"cp-{n}", checkpoint_storage=checkpoints)
            await checkpoint.commit_snapshot(state={
                "workflow_state": {"status": "idle", "superstep": 0}, "executor_states": {},
                "edge_states": {}, "messages": {"input": [], "output": [],
                                                "pending": {"messages": [], "requests": {}}}})

    asyncio.run(fill())
    return f"file:{tmp_path}"


def _into_a_closed_pipe(*argv: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``checkflow argv`` writing into a pipe whose reader is already gone (what
    ``| head -1`` is once head has its line)."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run([sys.executable, "-m", "checkflow", *argv], stdout=writer,
                              stderr=subprocess.PIPE, cwd=ROOT, timeout=120)
    finally:
        os.close(writer)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
@pytest.mark.parametrize("argv", [
    ["checkpoints", "ls"], ["checkpoints", "ls", "--json"], ["checkpoints", "show", "cp-1"],
    ["checkpoints", "export", "cp-1"], ["conversations", "ls", "--orphans"],
])
def test_output_into_a_closed_pipe_ends_quietly_with_the_status_of_sigpipe(
    argv: list[str], storage_url: str
) -> None:
    done = _into_a_closed_pipe(*argv, "--storage", storage_url)
    assert done.stderr == b""  # no BrokenPipeError traceback, no "Exception ignored"
    assert done.returncode == 128 + signal.SIGPIPE  # what a shell reports for head's writer


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
def test_head_reads_the_first_line_and_the_command_stays_quiet(storage_url: str) -> None:
    head = subprocess.run(
        f"{sys.executable} -m checkflow checkpoints ls --storage {storage_url} | head -1",
        shell=True, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (head.returncode, head.stdout, head.stderr) == (0, "cp-0\n", "")
