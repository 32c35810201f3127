"""``checkpoints export``: each stored part once by content id (the default) or ``--expand``.

Branches share most of their state parts; the default form must write a shared part once, so
its size follows the distinct parts, and rebuilding every snapshot's state from the parts
table must give exactly what ``--expand`` (today's self-contained form) shows.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import msgspec
import pytest

from checkflow.checkpoints import Checkpoint
from checkflow.cli import main
from checkflow.cli._export import write_export
from checkflow.cli._output import print_json
from checkflow.hosting import checkpoint_export
from checkflow.state import encode, register_state_type
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage


class Badge(msgspec.Struct):
    holder: str


register_state_type(Badge, type_id="tests.hosting.export.Badge")

BIG = "x" * 50_000  # a part no branch changes: it must appear in the export once
BRANCHES = 200


def _state(step: int, badge: str = "B-1") -> dict[str, Any]:
    return {
        "workflow_state": {"superstep": step, "log": BIG},
        "executor_states": {"desk": {"badge": Badge(badge)}},
        "edge_states": {},
        "messages": {"input": ["go"], "pending": {"messages": [], "requests": {}},
                     "output": [f"step {step}"]},
    }


def _branched(tmp_path: Path, branches: int) -> str:
    """file:<tmp> holding "cp-1": a root, then ``branches`` children of it (the last is head)."""
    asyncio.run(_commit_branches(tmp_path, branches))
    return f"file:{tmp_path}"


async def _commit_branches(tmp_path: Path, branches: int) -> None:
    storage = FileCheckpointStorage(tmp_path / "checkpoints")
    checkpoint = Checkpoint("cp-1", workflow_name="desk", graph_signature_hash="h1",
                            checkpoint_storage=storage)
    root = await checkpoint.commit_snapshot(state=_state(0), metadata={"superstep": 0})
    for step in range(1, branches + 1):
        checkpoint.restart_from(root.snapshot_id)
        await checkpoint.commit_snapshot(state=_state(step), metadata={"superstep": step})


def _export(capsys: pytest.CaptureFixture[str], url: str, *flags: str) -> str:
    assert main(["checkpoints", "export", "cp-1", "--storage", url, *flags]) == 0
    return capsys.readouterr().out


def _rebuilt(exported: dict[str, Any]) -> list[dict[str, Any]]:
    """Every snapshot of the default form with its state read back from the parts table."""
    parts = exported["parts"]
    return [{**snapshot, "state": {bucket: {key: parts[i] for key, i in ids.items()}
                                   for bucket, ids in snapshot["state"].items()}}
            for snapshot in exported["snapshots"]]


def test_branches_sharing_a_part_export_it_once(tmp_path: Path, capsys: Any) -> None:
    url = _branched(tmp_path, BRANCHES)
    text = _export(capsys, url)
    exported = json.loads(text)
    assert (exported["format"], exported["version"]) == ("checkflow.export", 2)
    assert len(exported["snapshots"]) == BRANCHES + 1
    assert text.count(BIG) == 1
    # shared by all: log, badge, input, pending, edge-free buckets; one superstep and output
    # per snapshot
    assert len(exported["parts"]) == 4 + 2 * (BRANCHES + 1)
    logs = {s["state"]["workflow_state"]["log"] for s in exported["snapshots"]}
    assert len(logs) == 1 and exported["parts"][logs.pop()] == BIG
    assert len(text) < len(BIG) + 1_000 * (BRANCHES + 1)
    assert len(_export(capsys, url, "--expand")) > len(BIG) * (BRANCHES + 1)


def test_the_output_grows_with_distinct_parts_not_with_snapshots(
    tmp_path: Path, capsys: Any
) -> None:
    few = len(_export(capsys, _branched(tmp_path / "few", 2)))
    many = len(_export(capsys, _branched(tmp_path / "many", 20)))
    assert few > len(BIG) and many - few < len(BIG)  # 18 more snapshots, no second copy


def test_rebuilding_each_state_from_the_parts_equals_the_expanded_form(
    tmp_path: Path, capsys: Any
) -> None:
    url = _branched(tmp_path, 5)
    exported = json.loads(_export(capsys, url))
    expanded = json.loads(_export(capsys, url, "--expand"))
    assert _rebuilt(exported) == expanded["snapshots"]
    assert exported["checkpoint"] == {k: v for k, v in expanded.items() if k != "snapshots"}
    assert json.loads(_export(capsys, url, "--json")) == exported  # JSON either way


def test_expand_prints_the_self_contained_export_as_before(
    tmp_path: Path, capsys: Any
) -> None:
    url = _branched(tmp_path, 3)
    expanded = _export(capsys, url, "--expand")
    storage = FileCheckpointStorage(tmp_path / "checkpoints")
    print_json(checkpoint_export(asyncio.run(storage.load("cp-1"))))
    assert expanded == capsys.readouterr().out
    assert "parts" not in json.loads(expanded)


def test_a_process_without_the_types_exports_them_opaque(tmp_path: Path) -> None:
    url = _branched(tmp_path, 2)
    done = subprocess.run(
        [sys.executable, "-m", "checkflow", "checkpoints", "export", "cp-1", "--storage", url],
        capture_output=True, text=True, timeout=120, check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    (snapshot, *_) = _rebuilt(json.loads(done.stdout))
    assert snapshot["state"]["executor_states"]["desk"] == {
        "badge": {"$opaque": "tests.hosting.export.Badge", "value": {"holder": "B-1"}}}


def test_an_unknown_checkpoint_is_a_one_line_error_with_exit_2(
    tmp_path: Path, capsys: Any
) -> None:
    url = _branched(tmp_path, 1)
    for flags in ([], ["--expand"]):
        assert main(["checkpoints", "export", "nope", "--storage", url, *flags]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("checkflow: error: ") and "nope" in err
        assert err.count("\n") == 1


def test_an_empty_checkpoint_exports_empty_tables() -> None:
    out = StringIO()
    write_export(Checkpoint("cp-0", workflow_name="w", graph_signature_hash="h"), out)
    exported = json.loads(out.getvalue())
    assert (exported["parts"], exported["snapshots"]) == ({}, [])
    assert exported["checkpoint"]["checkpoint_id"] == "cp-0"


async def test_the_same_bytes_in_both_encodings_are_two_parts() -> None:
    """JSON ``1`` and msgpack ``49`` are the same byte: one id each, each its own value."""
    assert encode(1, format="json") == encode(49, format="msgpack")
    storage = InMemoryCheckpointStorage(format="json")
    checkpoint = Checkpoint("cp-m", workflow_name="w", graph_signature_hash="h",
                            checkpoint_storage=storage)
    await checkpoint.commit_snapshot(state=_state(1))
    storage.format = "msgpack"
    await checkpoint.commit_snapshot(state=_state(49))
    out = StringIO()
    write_export(checkpoint, out)
    exported = json.loads(out.getvalue())
    steps = [s["state"]["workflow_state"]["superstep"] for s in exported["snapshots"]]
    assert steps[1] == steps[0] + "~msgpack"
    assert [s["state"]["workflow_state"]["superstep"] for s in _rebuilt(exported)] == [1, 49]
