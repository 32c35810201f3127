"""A file store written by the release before the typed layout (snapshot format 2, tagged
parts, BLAKE2b addresses) still verifies, loads and resumes; what this release adds on top
(format 3, typed parts, SHA-256 addresses) lives beside it in the same log."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from checkflow.storage import FileCheckpointStorage

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "release_2026_11"
sys.path.insert(0, str(FIXTURE))

from flow import build, records  # noqa: E402


@pytest.fixture(params=["json", "msgpack"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> FileCheckpointStorage:
    root = tmp_path / "store"
    shutil.copytree(FIXTURE / "store" / request.param, root)
    return FileCheckpointStorage(root, format=request.param)


async def test_the_old_log_verifies_and_loads_exactly(store: FileCheckpointStorage) -> None:
    assert all(report.ok for report in await store.verify())
    checkpoint = await store.load("collected")
    head = checkpoint.head_snapshot
    assert head is not None and head.format_version == 2
    assert head.state["executor_states"]["collector"]["records"] == records(300)


async def test_an_old_paused_run_resumes_and_new_commits_sit_beside_the_old(
    store: FileCheckpointStorage,
) -> None:
    checkpoint = await store.load("collected")
    old_head = checkpoint.head_snapshot_id
    result = await build().run(responses={"approve": True}, checkpoint=checkpoint)
    assert result.get_outputs() == [{"approved": True, "kept": 300}]

    fresh = FileCheckpointStorage(store.root, format=store.format)
    assert all(report.ok for report in await fresh.verify())
    reloaded = await fresh.load("collected")
    versions = {s.snapshot_id: s.format_version for s in reloaded.snapshots}
    assert versions[old_head] == 2  # type: ignore[index]
    assert reloaded.head_snapshot is not None and reloaded.head_snapshot.format_version == 3
    for snapshot in reloaded.snapshots:  # every snapshot, old or new, reads back exactly
        kept = snapshot.state["executor_states"].get("collector", {}).get("records")
        assert kept in (None, records(300))
