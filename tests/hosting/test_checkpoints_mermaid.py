"""``checkpoints tree --mermaid``: the snapshot graph parsed back gives snapshots, links, head."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from checkflow.cli import main
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import Executor, WorkflowBuilder, WorkflowContext, handler

_NODE = re.compile(r'^(s\d+)\["(\S+)(.*)"\]$')
_EDGE = re.compile(r"^(s\d+) --> (s\d+)$")
_HEAD = re.compile(r"^class (s\d+) head$")


class Count(Executor):
    @handler
    async def count(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        if n > 0:
            await ctx.send_message(n - 1)
        else:
            await ctx.yield_output(n)


def parse(text: str) -> tuple[dict[str, str], set[tuple[str, str]], str]:
    """(snapshot id -> its facts, parent/child links by snapshot id, the head's snapshot id)."""
    lines = [line.strip() for line in text.splitlines()]
    assert lines[:2] == ["flowchart TD", "classDef head stroke-width:4px"]
    ids: dict[str, str] = {}
    facts: dict[str, str] = {}
    links, heads = set(), []
    for line in lines[2:]:
        if m := _NODE.match(line):
            ids[m[1]] = m[2]
            facts[m[2]] = m[3].strip()
        elif m := _EDGE.match(line):
            links.add((ids[m[1]], ids[m[2]]))
        elif m := _HEAD.match(line):
            heads.append(ids[m[1]])
        else:
            raise AssertionError(f"a line the parser does not know: {line!r}")
    (head,) = heads
    return facts, links, head


async def test_the_mermaid_tree_is_the_snapshot_graph(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    counter = Count("count")
    workflow = WorkflowBuilder(counter, name="count").add_edge(counter, counter).build()
    storage = FileCheckpointStorage(tmp_path / "checkpoints")  # where file:PATH keeps them
    checkpoint = workflow.create_checkpoint(checkpoint_id="cp-1", checkpoint_storage=storage)
    await workflow.run(2, checkpoint=checkpoint)
    entry = next(s for s in checkpoint.snapshots if s.parent_snapshot_id is None)
    checkpoint.restart_from(entry.snapshot_id)
    await workflow.run(checkpoint=checkpoint)  # a second branch from the entry

    argv = ["checkpoints", "tree", "cp-1", "--mermaid", "--storage", f"file:{tmp_path}"]
    assert await asyncio.to_thread(main, argv) == 0  # the command runs its own event loop
    facts, links, head = parse(capsys.readouterr().out)

    loaded = await FileCheckpointStorage(tmp_path / "checkpoints").load("cp-1")
    assert set(facts) == {s.snapshot_id for s in loaded.snapshots}
    assert links == {(s.parent_snapshot_id, s.snapshot_id) for s in loaded.snapshots
                     if s.parent_snapshot_id is not None}
    assert head == loaded.head_snapshot_id
    assert len(loaded.children(entry.snapshot_id)) == 2  # the branch point forks
    assert facts[entry.snapshot_id].startswith("boundary=input_accepted superstep=0")


def test_mermaid_of_an_unknown_checkpoint_is_an_error(tmp_path: Path, capsys: Any) -> None:
    assert main(["checkpoints", "tree", "nope", "--mermaid", "--storage", f"file:{tmp_path}"]) == 2
    assert "nope" in capsys.readouterr().err
