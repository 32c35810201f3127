"""The client examples on the adapter pages run as written against a real served app."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "hosting"))

from served import served  # noqa: E402  (the hosting tests' uvicorn helper)

from checkflow.adapters.a2a import A2AAdapter  # noqa: E402
from checkflow.adapters.agui import AGUIAdapter  # noqa: E402
from checkflow.adapters.foundry import FoundryAdapter  # noqa: E402
from checkflow.hosting import WorkflowHost, create_app  # noqa: E402


def client_block(page: str) -> str:
    """The page's client example: its python block that reads ``BASE_URL``."""
    text = (ROOT / "docs" / "adapters" / page).read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "BASE_URL" in b]
    return block


@pytest.mark.parametrize("page", ["agui.md", "foundry.md", "a2a.md"])
async def test_the_client_example_runs(page: str, tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    try:
        from samples.approval import workflow
    finally:
        sys.path.remove(str(ROOT))
    app = create_app(WorkflowHost(workflow), adapters=[AGUIAdapter(), FoundryAdapter(),
                                                         A2AAdapter()])
    script = tmp_path / "client.py"
    script.write_text(client_block(page), encoding="utf-8")
    async with served(app) as (url, _):
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, str(script)], capture_output=True, text=True,
            timeout=60, env={**os.environ, "BASE_URL": url})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("asked:")
    assert lines[-1] == "answer: published: Five things to know about owls."
