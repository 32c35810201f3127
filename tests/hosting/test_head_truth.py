"""One truth for a conversation's head: the CLI and the native API agree, and show both heads
where storage's head is ahead of the conversation's (after a failed turn)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hosting_flows import build

from checkflow.cli import main
from checkflow.hosting import WorkflowHost, create_app
from checkflow.sessions import FileSessionStore
from checkflow.storage import FileCheckpointStorage


async def _show(capsys: pytest.CaptureFixture[str], root: Path, checkpoint_id: str
                ) -> dict[str, Any]:
    capsys.readouterr()
    argv = ["checkpoints", "show", checkpoint_id, "--storage", f"file:{root}", "--json"]
    assert await asyncio.to_thread(main, argv) == 0  # the command runs its own event loop
    shown: dict[str, Any] = json.loads(capsys.readouterr().out)
    return shown


async def test_the_cli_and_the_native_api_show_the_same_head_and_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = WorkflowHost(build(), session_store=FileSessionStore(tmp_path / "sessions"),
                        checkpoint_storage=FileCheckpointStorage(tmp_path / "checkpoints"))
    transport = httpx.ASGITransport(app=create_app(host))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        async def run(body: dict[str, Any]) -> dict[str, Any]:
            answer: dict[str, Any] = (await client.post("/v1/conversations/c/runs",
                                                        json=body)).json()
            return answer

        first = await run({"message": "one"})
        second = await run({"message": "two"})
        failed = await run({"message": "boom"})
        assert failed["status"] == "failed"
        good = second["resume_token"]["snapshot_id"]
        checkpoint_id = second["resume_token"]["checkpoint_id"]

        native = (await client.get("/v1/conversations/c")).json()
        shown = await _show(capsys, tmp_path, checkpoint_id)
        assert native["resume_token"]["snapshot_id"] == shown["head_snapshot_id"] == good
        assert native["status"] == shown["status"] == "idle"
        assert native["storage_head_snapshot_id"] == shown["storage_head_snapshot_id"] != good

        branched = await run({"message": "three",
                              "from_snapshot": first["resume_token"]["snapshot_id"]})
        head = branched["resume_token"]["snapshot_id"]
        native = (await client.get("/v1/conversations/c")).json()
        shown = await _show(capsys, tmp_path, checkpoint_id)
        assert native["resume_token"]["snapshot_id"] == shown["head_snapshot_id"] == head
        assert native["status"] == shown["status"] == "idle"
        assert "storage_head_snapshot_id" not in native
        assert "storage_head_snapshot_id" not in shown
        assert native["outputs"] == ["ONE", "THREE"]
