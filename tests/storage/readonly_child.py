"""Run inside a mount namespace where ROOT is a read-only bind mount: read, then try to write.

Prints one JSON line of findings for tests/storage/test_file_faults.py. Usage:
``readonly_child.py ROOT`` with ``ROOT/checkpoints`` and ``ROOT/sessions`` already populated.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from checkflow.checkpoints import Checkpoint
from checkflow.errors import StorageReadOnlyError
from checkflow.sessions import AgentSession, FileSessionStore
from checkflow.storage import FileCheckpointStorage


async def main(root: Path) -> dict[str, object]:
    storage = FileCheckpointStorage(root / "checkpoints")
    store = FileSessionStore(root / "sessions")
    found: dict[str, object] = {}
    checkpoint = await storage.load("c")
    found["head_n"] = checkpoint.head_snapshot.state["workflow_state"]["n"]  # type: ignore[union-attr]
    found["ids"] = await storage.list_checkpoint_ids()
    found["verify_ok"] = [r.ok for r in await storage.verify()]
    session = await store.get("s")
    found["session"] = None if session is None else session.state
    try:
        await checkpoint.commit_snapshot(state=dict(checkpoint.head_snapshot.state))  # type: ignore[union-attr]
    except StorageReadOnlyError as exc:
        found["commit_error"] = [type(exc).__name__, exc.errno, exc.operation]
    try:
        await Checkpoint("new", checkpoint_storage=storage).commit_snapshot(
            state=dict(checkpoint.head_snapshot.state)  # type: ignore[union-attr]
        )
    except StorageReadOnlyError as exc:
        found["create_error"] = type(exc).__name__
    try:
        await store.set(AgentSession(session_id="s", state={"x": 2}))
    except StorageReadOnlyError as exc:
        found["session_error"] = [type(exc).__name__, exc.operation]
    return found


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(Path(sys.argv[1])))))
