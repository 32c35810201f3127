"""End to end: ``python -m checkflow serve --loop`` serves conversations on the loop it names.

A real served process per loop (uvloop's is skipped when uvloop is not installed: the
``hosting`` extra has it); the banner names the loop, and a conversation (a message that
pauses for approval, then the answer) completes on it, on durable ``file:`` storage.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

Start = Callable[..., Any]
HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


async def _one_conversation(url: str) -> None:
    runs = f"{url}/v1/conversations/loop-1/runs"
    async with httpx.AsyncClient(timeout=60) as client:
        paused = (await client.post(runs, json={"message": "cats"})).json()
        assert paused["status"] == "awaiting_responses"
        request_id = paused["pending_requests"][0]["request_id"]
        done = (await client.post(runs, json={"responses": {request_id: True}})).json()
    assert done["status"] == "idle"
    assert done["outputs"] == ["published: Five things to know about cats."]


@pytest.mark.parametrize("loop", [
    "asyncio",
    pytest.param("uvloop", marks=pytest.mark.skipif(
        not HAS_UVLOOP, reason="uvloop is not installed (extra hosting)")),
])
async def test_a_served_process_runs_conversations_on_the_chosen_loop(
    loop: str, start_server: Start, tmp_path: Path
) -> None:
    store = tmp_path / "loop-store"
    server = start_server("samples.approval:workflow", f"file:{store}", "--loop", loop)
    banner = next(line for line in server.output if " on http://" in line)
    assert f"(storage file:{store}, loop {loop})" in banner
    await _one_conversation(server.url)


def test_the_variable_picks_the_loop_when_no_flag_does(
    start_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHECKFLOW_LOOP", "asyncio")  # the server inherits this environment
    server = start_server("samples.approval:workflow", "memory:")
    banner = next(line for line in server.output if " on http://" in line)
    assert "(storage memory:, loop asyncio)" in banner
