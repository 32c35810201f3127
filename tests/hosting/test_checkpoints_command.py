"""``python -m checkflow checkpoints ...``: list, show, tree, pending, prune and export a storage.

The storage is written by this process with a registered custom type; the export runs in a
fresh process that never registered it (as an operator's shell would), so the inspection
decode must show it as an opaque value instead of failing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from checkflow.checkpoints import Checkpoint
from checkflow.cli import main
from checkflow.state import register_state_type
from checkflow.storage import FileCheckpointStorage


class Ticket(msgspec.Struct):
    code: str


register_state_type(Ticket, type_id="tests.hosting.cli.Ticket")


def _state(status: str, output: list[Any], requests: dict[str, Any]) -> dict[str, Any]:
    return {
        "workflow_state": {"status": status, "superstep": len(output)},
        "executor_states": {"desk": {"ticket": Ticket("T-1")}},
        "edge_states": {},
        "messages": {"input": ["go"], "pending": {"messages": [], "requests": requests},
                     "output": output},
    }


@pytest.fixture
async def storage_url(tmp_path: Path) -> str:
    """file:<tmp> holding "cp-1": a -> b -> c, then a branch a -> d (head), pending at d."""
    storage = FileCheckpointStorage(tmp_path / "checkpoints")
    checkpoint = Checkpoint("cp-1", workflow_name="desk", graph_signature_hash="h1",
                            checkpoint_storage=storage)
    a = await checkpoint.commit_snapshot(state=_state("running", [], {}),
                                         metadata={"boundary": "input_accepted", "superstep": 0})
    await checkpoint.commit_snapshot(state=_state("running", ["b"], {}),
                                     metadata={"boundary": "superstep_completed", "superstep": 1})
    await checkpoint.commit_snapshot(state=_state("idle", ["b", "c"], {}),
                                     metadata={"boundary": "superstep_completed", "status": "idle"})
    checkpoint.restart_from(a.snapshot_id)
    request = {"request_id": "r-1", "source_executor_id": "desk", "data": {"q": "ok?"},
               "response_type": "bool"}
    await checkpoint.commit_snapshot(
        state=_state("awaiting_responses", ["d"], {"r-1": request}),
        metadata={"boundary": "superstep_completed", "status": "awaiting_responses"})
    return f"file:{tmp_path}"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def shown(capsys: pytest.CaptureFixture[str], storage_url: str) -> dict[str, Any]:
    """``checkpoints show cp-1 --json``, parsed."""
    result: dict[str, Any] = json.loads(
        cli(capsys, "checkpoints", "show", "cp-1", "--storage", storage_url, "--json"))
    return result


def test_ls_lists_checkpoint_ids(storage_url: str, capsys: Any) -> None:
    assert cli(capsys, "checkpoints", "ls", "--storage", storage_url).split() == ["cp-1"]
    assert json.loads(cli(capsys, "checkpoints", "ls", "--storage", storage_url, "--json")) == [
        "cp-1"]


def test_show_names_head_status_and_pending(storage_url: str, capsys: Any) -> None:
    summary = shown(capsys, storage_url)
    assert summary["status"] == "awaiting_responses"
    assert summary["snapshot_count"] == 4
    assert len(summary["tips"]) == 2
    assert [r["request_id"] for r in summary["pending_requests"]] == ["r-1"]
    text = cli(capsys, "checkpoints", "show", "cp-1", "--storage", storage_url)
    assert "awaiting_responses" in text and "r-1" in text


def test_tree_draws_the_branch_and_marks_the_head(storage_url: str, capsys: Any) -> None:
    lines = cli(capsys, "checkpoints", "tree", "cp-1", "--storage", storage_url).splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("○ ")
    assert lines[1].startswith("├─○ ") and lines[2].startswith("│ ○ ")
    assert lines[3].startswith("└─● ") and lines[3].endswith("<- head")


def test_pending_lists_the_requests_at_the_head(storage_url: str, capsys: Any) -> None:
    pending = json.loads(cli(capsys, "checkpoints", "pending", "cp-1", "--storage", storage_url,
                             "--json"))
    assert pending == [{"request_id": "r-1", "source_executor_id": "desk", "data": {"q": "ok?"},
                        "response_type": "bool"}]


def test_prune_keeps_the_head_lineage_and_removes_the_rest(
    storage_url: str, capsys: Any
) -> None:
    removed = json.loads(cli(capsys, "checkpoints", "prune", "cp-1", "--storage", storage_url,
                             "--json"))["removed"]
    assert len(removed) == 2
    assert shown(capsys, storage_url)["snapshot_count"] == 2


def test_prune_keeps_the_given_snapshots_with_their_ancestors(
    storage_url: str, capsys: Any
) -> None:
    before = shown(capsys, storage_url)
    (old_tip,) = [tip for tip in before["tips"] if tip != before["head_snapshot_id"]]
    removed = json.loads(cli(capsys, "checkpoints", "prune", "cp-1", "--storage", storage_url,
                             "--keep", old_tip, "--json"))["removed"]
    assert removed == []
    text = cli(capsys, "checkpoints", "prune", "cp-1", "--storage", storage_url)
    assert text.startswith("removed 2 snapshot(s)")


def test_prune_keeping_an_unknown_snapshot_removes_nothing_and_says_why(
    storage_url: str, capsys: Any
) -> None:
    argv = ["checkpoints", "prune", "cp-1", "--storage", storage_url, "--keep", "no-such"]
    assert main(argv) == 2
    assert "no-such" in capsys.readouterr().err
    assert shown(capsys, storage_url)["snapshot_count"] == 4


def test_an_unknown_checkpoint_is_an_error_not_a_traceback(
    storage_url: str, capsys: Any
) -> None:
    assert main(["checkpoints", "show", "nope", "--storage", storage_url]) == 2
    assert "nope" in capsys.readouterr().err


def test_an_unknown_storage_scheme_is_an_error(capsys: Any) -> None:
    assert main(["checkpoints", "ls", "--storage", "s3:bucket"]) == 2
    assert "s3" in capsys.readouterr().err


def test_export_in_a_process_without_the_types_shows_them_opaque(storage_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "checkflow", "checkpoints", "export", "cp-1", "--expand",
         "--storage", storage_url],
        capture_output=True, text=True, timeout=120, check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    exported = json.loads(done.stdout)
    assert exported["checkpoint_id"] == "cp-1"
    assert len(exported["snapshots"]) == 4
    ticket = exported["snapshots"][0]["state"]["executor_states"]["desk"]["ticket"]
    assert ticket == {"$opaque": "tests.hosting.cli.Ticket", "value": {"code": "T-1"}}


@pytest.mark.parametrize("command", [["checkpoints", "ls"], ["checkpoints", "show", "cp-1"],
                                     ["conversations", "ls"]])
def test_a_storage_path_that_does_not_exist_exits_2_naming_it(
    command: list[str], tmp_path: Path, capsys: Any
) -> None:
    missing = tmp_path / "typo"
    assert main([*command, "--storage", f"file:{missing}"]) == 2
    assert str(missing) in capsys.readouterr().err
    assert not missing.exists()  # inspecting never creates it


def test_prune_dry_run_lists_what_would_go_and_removes_nothing(
    storage_url: str, capsys: Any
) -> None:
    would = json.loads(cli(capsys, "checkpoints", "prune", "cp-1", "--dry-run",
                           "--storage", storage_url, "--json"))["would_remove"]
    assert shown(capsys, storage_url)["snapshot_count"] == 4
    removed = json.loads(cli(capsys, "checkpoints", "prune", "cp-1", "--storage", storage_url,
                             "--json"))["removed"]
    assert would == removed and len(removed) == 2
    text = cli(capsys, "checkpoints", "prune", "cp-1", "--dry-run", "--storage", storage_url)
    assert text.startswith("would remove 0 snapshot(s)")


def test_tree_since_and_limit_draw_part_of_the_history(storage_url: str, capsys: Any) -> None:
    snapshots = json.loads(cli(capsys, "checkpoints", "tree", "cp-1", "--storage", storage_url,
                               "--json"))
    b = snapshots[1]["snapshot_id"]
    since = cli(capsys, "checkpoints", "tree", "cp-1", "--since", b,
                "--storage", storage_url).splitlines()
    assert len(since) == 2 and since[0].startswith(f"○ {b}")
    limited = cli(capsys, "checkpoints", "tree", "cp-1", "--limit", "2",
                  "--storage", storage_url).splitlines()
    assert len(limited) == 3 and limited[-1] == "... 2 more snapshot(s) (raise --limit)"
    as_json = json.loads(cli(capsys, "checkpoints", "tree", "cp-1", "--since", b, "--limit", "1",
                             "--storage", storage_url, "--json"))
    assert [s["snapshot_id"] for s in as_json] == [b]
    assert main(["checkpoints", "tree", "cp-1", "--since", "nope",
                 "--storage", storage_url]) == 2
    assert "nope" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["serve", "m:a", "--json"]])
def test_a_subcommand_without_json_output_refuses_json(argv: list[str], capsys: Any) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and "--json" in capsys.readouterr().err


def test_export_honours_json_either_way(storage_url: str, capsys: Any) -> None:
    plain = json.loads(cli(capsys, "checkpoints", "export", "cp-1", "--storage", storage_url))
    assert plain == json.loads(cli(capsys, "checkpoints", "export", "cp-1", "--json",
                                   "--storage", storage_url))
