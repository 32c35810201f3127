"""The explicit v1 migration: real v1 files (tests/fixtures/v1, written by the previous
generation's own FileCheckpointStorage) become v2 checkpoints, and a paused one finishes."""

from __future__ import annotations

import asyncio
import base64
import fractions
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from v1_equivalents import FIXTURES, Ticket, approval

from checkflow.cli import main
from checkflow.errors import MigrationError, V1TypeRefusedError
from checkflow.migrate import migrate_v1
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage
from checkflow.workflows import RunStatus, inspect_snapshot


def copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / "v1" / name
    shutil.copytree(FIXTURES / name, target)
    return target


async def test_a_linear_run_becomes_one_checkpoint_with_the_v1_lineage(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "v2")
    summary = await migrate_v1(FIXTURES / "linear", storage)

    assert [c.checkpoint_id for c in summary.checkpoints] == ["linear-0"]
    assert summary.snapshot_count == 4 and summary.skipped == []
    checkpoint = await FileCheckpointStorage(tmp_path / "v2").load("linear-0")
    assert checkpoint.workflow_name == "linear"
    assert [s.snapshot_id for s in checkpoint.ancestors(checkpoint.head_snapshot_id)] == [
        "linear-3", "linear-2", "linear-1", "linear-0"]
    entry = checkpoint.get_snapshot("linear-0").state
    assert entry["messages"]["pending"]["messages"] == [
        {"kind": "message", "source": None, "target": "start", "data": 21}]
    head = checkpoint.head_snapshot.state
    assert set(head["executor_states"]) == {"start", "double", "finish"}
    assert head["messages"]["output"] == [] and head["messages"]["input"] == []
    assert head["workflow_state"]["status"] == "idle"
    assert head["workflow_state"]["superstep"] == 3
    assert checkpoint.head_snapshot.metadata["migrated_from_v1"] == "linear-3"
    # a message v1 would have routed by its edges is reported, never guessed
    assert any("linear-1.json" in n and "without a target" in n
               for n in summary.checkpoints[0].notes)


async def test_a_migrated_paused_checkpoint_resumes_with_the_v2_workflow(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "v2")
    summary = await migrate_v1(FIXTURES / "paused", storage,
                               graph_signature_hash=approval.graph_signature_hash)
    (migrated,) = summary.checkpoints
    assert (migrated.head_snapshot_id, migrated.status) == ("paused-2", "awaiting_responses")

    checkpoint = await FileCheckpointStorage(tmp_path / "v2").load("paused-0")
    view = inspect_snapshot(checkpoint.head_snapshot, workflow=approval)
    assert view.status is RunStatus.AWAITING_RESPONSES
    assert view.shared_state == {"topic": "owls"}
    (request,) = view.pending_requests.values()
    assert (request.request_id, request.source_executor_id) == ("approve-1", "reviewer")
    assert request.response_type is bool

    result = await approval.run(responses={"approve-1": True}, checkpoint=checkpoint)

    assert result.status is RunStatus.IDLE
    assert result.get_outputs() == ["published: Five things to know about owls."]
    assert checkpoint.head_snapshot.state["executor_states"]["reviewer"] == {"reviewed": 1}


async def test_without_the_v2_signature_a_v2_workflow_refuses_the_checkpoint() -> None:
    from checkflow.errors import GraphSignatureMismatchError

    storage = InMemoryCheckpointStorage()
    await migrate_v1(FIXTURES / "paused", storage)
    checkpoint = await storage.load("paused-0")
    with pytest.raises(GraphSignatureMismatchError):
        await approval.run(responses={"approve-1": True}, checkpoint=checkpoint)


async def test_a_fan_in_run_migrates_its_branches_state(tmp_path: Path) -> None:
    storage = InMemoryCheckpointStorage()
    summary = await migrate_v1(FIXTURES / "fan_in", storage)
    (migrated,) = summary.checkpoints
    assert migrated.snapshot_ids == ["fan_in-0", "fan_in-1", "fan_in-2", "fan_in-3"]
    checkpoint = await storage.load("fan_in-0")
    assert set(checkpoint.head_snapshot.state["executor_states"]) == {
        "split", "upper", "reverse", "join"}
    notes = [n for n in migrated.notes if n.startswith("fan_in-2.json")]
    assert len(notes) == 2  # both branches' replies were in flight at fan_in-2


async def test_a_forbidden_pickled_type_is_refused_naming_type_and_file(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "v2")
    with pytest.raises(V1TypeRefusedError) as refused:
        await migrate_v1(FIXTURES / "forbidden", storage)
    assert (refused.value.type_name, refused.value.file) == ("legacy_types:Ticket",
                                                             "forbidden-1.json")
    assert "forbidden-1.json" in str(refused.value) and "legacy_types:Ticket" in str(refused.value)
    assert await storage.list_checkpoint_ids() == []  # nothing was written


async def test_an_admitted_type_is_re_encoded_with_the_state_codec(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "v2")
    await migrate_v1(FIXTURES / "forbidden", storage, allow_types=["legacy_types:Ticket"])
    checkpoint = await FileCheckpointStorage(tmp_path / "v2").load("forbidden-0")
    ticket = checkpoint.head_snapshot.state["workflow_state"]["shared_state"]["ticket"]
    assert ticket == Ticket(code="T-7", priority=2)


async def test_an_admitted_but_unregistered_type_fails_clearly(tmp_path: Path) -> None:
    folder = copy("linear", tmp_path)
    data = json.loads((folder / "linear-3.json").read_text())
    data["state"]["loose"] = {"__pickled__": base64.b64encode(pickle.dumps(
        fractions.Fraction(1, 3))).decode(), "__type__": "fractions:Fraction"}
    (folder / "linear-3.json").write_text(json.dumps(data))
    storage = InMemoryCheckpointStorage()
    with pytest.raises(MigrationError, match=r"linear-3\.json: cannot re-encode.*Fraction"):
        await migrate_v1(folder, storage, allow_types=["fractions:Fraction"])
    assert await storage.list_checkpoint_ids() == []


def _payload(obj: Any) -> dict[str, str]:
    return {"__pickled__": base64.b64encode(pickle.dumps(obj)).decode(), "__type__": "x:y"}


class _Boom:
    def __reduce__(self) -> Any:
        return (print, ("this must never run",))


async def test_a_pickle_that_calls_a_function_is_refused_before_it_runs(
        tmp_path: Path, capsys: Any) -> None:
    folder = copy("linear", tmp_path)
    data = json.loads((folder / "linear-2.json").read_text())
    data["state"]["evil"] = _payload(_Boom())
    (folder / "linear-2.json").write_text(json.dumps(data))
    with pytest.raises(V1TypeRefusedError, match="builtins:print"):
        await migrate_v1(folder, InMemoryCheckpointStorage(), allow_types=["builtins:print"])
    assert "must never run" not in capsys.readouterr().out


async def test_a_v1_framework_type_that_is_no_envelope_is_refused(tmp_path: Path) -> None:
    folder = copy("linear", tmp_path)
    data = json.loads((folder / "linear-2.json").read_text())
    # a pickle naming agent_framework's Message, written by hand: the package is not installed
    raw = b"\x80\x02cagent_framework._types\nMessage\n)\x81."  # GLOBAL, NEWOBJ
    data["state"]["chat"] = {"__pickled__": base64.b64encode(raw).decode(),
                             "__type__": "agent_framework._types:Message"}
    (folder / "linear-2.json").write_text(json.dumps(data))
    with pytest.raises(V1TypeRefusedError, match=r"agent_framework\._types:Message"):
        await migrate_v1(folder, InMemoryCheckpointStorage())


async def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "v2")
    summary = await migrate_v1(FIXTURES / "paused", storage, dry_run=True)
    assert summary.dry_run and summary.snapshot_count == 3
    assert await storage.list_checkpoint_ids() == []


async def test_files_that_cannot_be_migrated_are_skipped_with_reasons(tmp_path: Path) -> None:
    folder = copy("linear", tmp_path)
    (folder / "broken.json").write_text("{not json")
    (folder / "other.json").write_text(json.dumps({"hello": "world"}))
    orphan = json.loads((folder / "linear-2.json").read_text())
    orphan.update(checkpoint_id="orphan-1", previous_checkpoint_id="gone")
    (folder / "orphan-1.json").write_text(json.dumps(orphan))
    storage = InMemoryCheckpointStorage()

    summary = await migrate_v1(folder, storage)

    reasons = {s.file: s.reason for s in summary.skipped}
    assert reasons["broken.json"].startswith("not readable as JSON")
    assert reasons["other.json"].startswith("not a v1 checkpoint")
    assert reasons["orphan-1.json"] == "its previous checkpoint 'gone' is missing"
    assert [c.checkpoint_id for c in summary.checkpoints] == ["linear-0"]

    again = await migrate_v1(folder, storage)  # a rerun changes nothing and says why
    assert again.checkpoints == []
    assert {s.reason for s in again.skipped if s.file.startswith("linear")} == {
        "checkpoint 'linear-0' is already in the destination"}


async def test_a_branched_v1_lineage_is_one_checkpoint_with_its_newest_tip_as_head(
        tmp_path: Path) -> None:
    folder = copy("linear", tmp_path)
    branch = json.loads((folder / "linear-2.json").read_text())
    branch.update(checkpoint_id="linear-2b", previous_checkpoint_id="linear-1",
                  timestamp="2026-02-01T00:00:00+00:00")
    (folder / "linear-2b.json").write_text(json.dumps(branch))
    storage = InMemoryCheckpointStorage()
    await migrate_v1(folder, storage)
    checkpoint = await storage.load("linear-0")
    assert checkpoint.head_snapshot_id == "linear-2b"
    assert sorted(s.snapshot_id for s in checkpoint.children("linear-1")) == [
        "linear-2", "linear-2b"]


def test_an_unknown_folder_and_a_bad_allow_type_are_errors(tmp_path: Path) -> None:
    with pytest.raises(MigrationError, match="not a folder"):
        asyncio.run(migrate_v1(tmp_path / "nope", InMemoryCheckpointStorage()))
    with pytest.raises(ValueError, match="module:QualName"):
        asyncio.run(migrate_v1(FIXTURES / "linear", InMemoryCheckpointStorage(),
                               allow_types=["Ticket"]))


def test_the_command_migrates_prints_a_summary_and_the_result_resumes(
        tmp_path: Path, capsys: Any) -> None:
    url = f"file:{tmp_path / 'v2'}"
    argv = ["migrate-v1", str(FIXTURES / "paused"), "--to", url,
            "--workflow", "v1_equivalents:approval"]
    assert main([*argv, "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("would migrate 1 checkpoint(s), 3 snapshot(s)")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("migrated 1 checkpoint(s), 3 snapshot(s); skipped 0 file(s)")
    assert "paused-0 (approval): 3 snapshot(s), head paused-2, awaiting_responses" in out

    async def resume() -> Any:
        checkpoint = await FileCheckpointStorage(tmp_path / "v2" / "checkpoints").load("paused-0")
        return await approval.run(responses={"approve-1": False}, checkpoint=checkpoint)

    assert asyncio.run(resume()).get_outputs() == ["dropped"]


def test_the_command_names_a_refused_type_and_exits_2(tmp_path: Path, capsys: Any) -> None:
    argv = ["migrate-v1", str(FIXTURES / "forbidden"), "--to", f"file:{tmp_path}"]
    assert main(argv) == 2
    assert "forbidden-1.json: refusing to unpickle 'legacy_types:Ticket'" in capsys.readouterr().err


def test_no_load_path_imports_the_migration() -> None:
    code = ("import sys, checkflow, checkflow.storage, checkflow.hosting, checkflow.cli; "
            "print('checkflow.migrate' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
