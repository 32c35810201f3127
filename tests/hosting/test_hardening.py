"""Typed answers to every fault, bounded cost per conversation, leases a restart need not wait.

Each test is an attack observed on a running server, replayed against the app in process
(the kill test against a real child process).
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest
from hosting_flows import Gate, build

from checkflow.agents import ChatMessage, WorkflowAgent
from checkflow.errors import (
    CheckpointLostError,
    ConversationBusyError,
    ConversationLimitError,
    StateTooLargeError,
)
from checkflow.hosting import WorkflowHost, create_app
from checkflow.sessions import AgentSession, FileSessionStore, InMemorySessionStore
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import Executor, RunStatus, WorkflowBuilder, WorkflowContext, handler

HERE = Path(__file__).resolve().parent


def _client(host: WorkflowHost) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(host)),
                             base_url="http://t")


@pytest.mark.parametrize("raw", ["%ff", "%fe", "a%C3", "%ED%A0%80"])
async def test_a_conversation_id_that_is_not_utf8_is_400(raw: str) -> None:
    async with _client(WorkflowHost(build())) as client:
        answer = await client.post(f"/v1/conversations/{raw}/runs", json={"message": "x"})
        got = await client.get(f"/v1/conversations/{raw}")
    assert (answer.status_code, answer.json()["error"]["code"]) == (400,
                                                                     "invalid_conversation_id")
    assert got.status_code == 400


async def test_the_replacement_character_is_its_own_conversation() -> None:
    async with _client(WorkflowHost(build())) as client:
        ok = await client.post("/v1/conversations/%EF%BF%BD/runs", json={"message": "x"})
        assert ok.status_code == 200 and ok.json()["conversation_id"] == "\ufffd"
        assert (await client.get("/v1/conversations/%ff")).status_code == 400


async def test_an_empty_or_overlong_conversation_id_is_refused() -> None:
    async with _client(WorkflowHost(build())) as client:
        empty = await client.post("/v1/conversations//runs", json={"message": "x"})
        long = await client.post(f"/v1/conversations/{'a' * 513}/runs", json={"message": "x"})
        just = await client.post(f"/v1/conversations/{'a' * 512}/runs", json={"message": "x"})
    assert (empty.status_code, empty.json()["error"]["code"]) == (400, "invalid_conversation_id")
    assert (long.status_code, long.json()["error"]["code"]) == (414, "conversation_id_too_long")
    assert just.status_code == 200


async def test_a_deeply_nested_body_is_422_before_anything_runs() -> None:
    host = WorkflowHost(build())
    async with _client(host) as client:
        for depth in (65, 700, 5_000):
            body = b'{"message": ' + b"[" * depth + b"]" * depth + b"}"
            answer = await client.post("/v1/conversations/c/runs", content=body,
                                       headers={"content-type": "application/json"})
            assert (answer.status_code, answer.json()["error"]["code"]) == (
                422, "too_deeply_nested"), depth
    assert await host.list_conversations() == []


async def test_new_input_is_refused_past_the_pending_request_limit() -> None:
    host = WorkflowHost(build(), max_pending_requests=2)
    first = await host.run("c", message="ask one")
    await host.run("c", message="ask two")
    with pytest.raises(ConversationLimitError, match="2 pending requests") as refused:
        await host.run("c", message="ask three")
    assert refused.value.limit == "pending_requests"
    (request_id,) = first.pending_requests
    await host.run("c", responses={request_id: True})  # answering is always allowed
    assert (await host.run("c", message="ask three")).status is RunStatus.AWAITING_RESPONSES
    async with _client(host) as client:
        answer = await client.post("/v1/conversations/c/runs", json={"message": "ask four"})
    assert answer.status_code == 409
    assert answer.json()["error"]["code"] == "pending_requests_limit"
    assert answer.json()["error"]["maximum"] == 2


async def test_a_run_is_refused_once_the_checkpoint_holds_the_snapshot_limit(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path / "c")
    host = WorkflowHost(build(), checkpoint_storage=storage, max_snapshots=12)
    first = await host.run("c", message="one")  # 4 snapshots
    await host.run("c", message="two")  # 8
    assert first.resume_token is not None
    branch = await host.run("c", message="three",  # 12: a branch from the first turn
                            from_snapshot=first.resume_token.snapshot_id)
    with pytest.raises(ConversationLimitError, match="prune checkpoint") as refused:
        await host.run("c", message="four")
    assert (refused.value.limit, refused.value.actual) == ("snapshots", 12)
    assert branch.resume_token is not None
    removed = await storage.prune(branch.resume_token.checkpoint_id,
                                  keep=[branch.resume_token.snapshot_id])
    assert len(removed) == 4  # the abandoned "two" branch
    assert (await host.run("c", message="four")).outputs == ["FOUR"]


async def test_a_cancelled_first_turn_keeps_its_snapshots_as_a_listed_orphan(
    tmp_path: Path, gate: Gate
) -> None:
    from checkflow.hosting import find_orphan_checkpoints

    storage, sessions = FileCheckpointStorage(tmp_path / "c"), FileSessionStore(tmp_path / "s")
    host = WorkflowHost(build(gate), session_store=sessions, checkpoint_storage=storage)
    held = asyncio.ensure_future(host.run("c", message="hold"))
    await asyncio.wait_for(gate.entered.wait(), 10)
    (begun,) = await storage.list_checkpoint_ids()  # its entry snapshot is committed
    await host.cancel("c")
    assert (await held).status is RunStatus.CANCELLED
    kept = await storage.load(begun)  # what was announced is still readable
    assert len(kept.snapshots) == 1
    assert await find_orphan_checkpoints(sessions, storage) == [begun]
    gate.release.set()
    again = await host.run("c", message="two")  # the conversation starts a new checkpoint
    assert again.resume_token is not None and again.resume_token.checkpoint_id != begun


class FaultySessions(InMemorySessionStore):
    def __init__(self) -> None:
        super().__init__()
        self.fault: int | None = None

    async def set(self, session: AgentSession, **kwargs: Any) -> str:
        if self.fault is not None:
            raise OSError(self.fault, os.strerror(self.fault))
        return await super().set(session, **kwargs)


@pytest.mark.parametrize(("fault", "code"), [(errno.ENOSPC, "storage_full"),
                                             (errno.EROFS, "storage_read_only"),
                                             (errno.EIO, "storage_unavailable"),
                                             (errno.EMFILE, "storage_unavailable")])
async def test_storage_faults_are_a_typed_503_and_readyz_says_not_ready(
    fault: int, code: str
) -> None:
    sessions = FaultySessions()
    host = WorkflowHost(build(), session_store=sessions)
    async with _client(host) as client:
        assert (await client.get("/readyz")).status_code == 200
        sessions.fault = fault
        answer = await client.post("/v1/conversations/c/runs", json={"message": "x"})
        host._ready_at = None  # the probe's cached outcome is for a second or two
        ready = await client.get("/readyz")
    assert (answer.status_code, answer.json()["error"]["code"]) == (503, code)
    assert answer.headers["retry-after"] == "1"
    assert ready.status_code == 503


async def test_a_damaged_checkpoint_is_503_checkpoint_corrupt_naming_it(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "c")
    host = WorkflowHost(build(), checkpoint_storage=storage)
    done = await host.run("c", message="one")
    assert done.resume_token is not None
    (log,) = [p for p in (tmp_path / "c").rglob("*") if p.is_file() and p.stat().st_size > 200]
    log.write_bytes(b"\x00garbage" * (log.stat().st_size // 8))  # no valid log at all
    async with _client(host) as client:
        answer = await client.get("/v1/conversations/c")
    assert (answer.status_code, answer.json()["error"]["code"]) == (503, "checkpoint_corrupt")
    assert answer.json()["error"]["source"]


_CHILD = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, sys.argv[3])
    from hosting_flows import build
    from checkflow.hosting import WorkflowHost
    from checkflow.hosting._keys import ConversationKey
    from checkflow.sessions import FileSessionStore
    from checkflow.storage import FileCheckpointStorage

    async def main():
        host = WorkflowHost(build(), session_store=FileSessionStore(sys.argv[1]),
                            checkpoint_storage=FileCheckpointStorage(sys.argv[2]))
        await host._leases.acquire(ConversationKey(None, "c"))
        print("leased", flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
""")


async def test_a_restarted_server_takes_over_the_lease_of_its_dead_predecessor_at_once(
    tmp_path: Path,
) -> None:
    sessions, checkpoints = tmp_path / "s", tmp_path / "c"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(sessions), str(checkpoints), str(HERE)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "leased"
        host = WorkflowHost(build(), session_store=FileSessionStore(sessions),
                            checkpoint_storage=FileCheckpointStorage(checkpoints),
                            lease_seconds=300)
        with pytest.raises(ConversationBusyError):
            await host.run("c", message="x")  # its owner is alive: busy
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        result = await host.run("c", message="x")  # no waiting out the 300 s lease
        assert result.outputs == ["X"]
        await host.delete("c")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)


def _log_file(root: Path) -> Path:
    (log,) = [p for p in root.rglob("*") if p.is_file() and p.stat().st_size > 200]
    return log


async def test_a_log_cut_short_below_an_acknowledged_head_is_checkpoint_lost_not_a_fresh_start(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path / "c")
    host = WorkflowHost(build(), session_store=FileSessionStore(tmp_path / "s"),
                        checkpoint_storage=storage)
    first = await host.run("c", message="one")
    size_after_first = _log_file(tmp_path / "c").stat().st_size
    second = await host.run("c", message="two")
    log = _log_file(tmp_path / "c")
    with log.open("r+b") as f:  # the second turn's records are cut short, as by a lost write
        f.truncate((size_after_first + log.stat().st_size) // 2)
    with pytest.raises(CheckpointLostError) as lost:
        await host.get_conversation("c")
    assert second.resume_token is not None and first.resume_token is not None
    assert lost.value.expected_head_snapshot_id == second.resume_token.snapshot_id
    actual = lost.value.actual_head_snapshot_id  # an earlier snapshot storage kept
    assert actual is not None and actual != second.resume_token.snapshot_id
    async with _client(host) as client:
        got = await client.get("/v1/conversations/c")
        ran = await client.post("/v1/conversations/c/runs", json={"message": "three"})
    for answer in (got, ran):
        assert (answer.status_code, answer.json()["error"]["code"]) == (500, "checkpoint_lost")
        assert answer.json()["error"]["expected_head_snapshot_id"] == (
            second.resume_token.snapshot_id)
    # the conversation was not replaced by a fresh one: it still names the lost head
    with pytest.raises(CheckpointLostError):
        await host.run("c", message="four")
    assert await storage.list_checkpoint_ids() == [first.resume_token.checkpoint_id]


class Echo(Executor):
    @handler
    async def echo(self, messages: list[ChatMessage], ctx: WorkflowContext) -> None:
        await ctx.yield_output(messages[-1].text)


async def test_a_workflow_agent_is_told_its_acknowledged_head_is_lost(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "c")
    agent = WorkflowAgent(WorkflowBuilder(start_executor=Echo("echo")).build(),
                          checkpoint_storage=storage)
    session = agent.create_session()
    await agent.run("one", session=session)
    size = _log_file(tmp_path / "c").stat().st_size
    await agent.run("two", session=session)
    log = _log_file(tmp_path / "c")
    with log.open("r+b") as f:
        f.truncate((size + log.stat().st_size) // 2)
    with pytest.raises(CheckpointLostError):
        await agent.run("three", session=session)


async def test_a_state_over_the_size_limit_commits_nothing_and_is_422(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "c")
    host = WorkflowHost(build(), checkpoint_storage=storage, max_state_bytes=4_000)
    with pytest.raises(StateTooLargeError, match="over the limit of 4000"):
        await host.run("c", message="x" * 10_000)
    assert await storage.list_checkpoint_ids() == []
    async with _client(host) as client:
        answer = await client.post("/v1/conversations/c/runs", json={"message": "y" * 10_000})
        small = await client.post("/v1/conversations/c/runs", json={"message": "small"})
    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "state_too_large")
    assert answer.json()["error"]["limit"] == 4_000
    assert small.status_code == 200 and small.json()["outputs"] == ["SMALL"]


async def test_checkpoints_verify_reports_a_torn_tail_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from checkflow.cli import main

    host = WorkflowHost(build(), session_store=FileSessionStore(tmp_path / "sessions"),
                        checkpoint_storage=FileCheckpointStorage(tmp_path / "checkpoints"))
    done = await host.run("c", message="one")
    assert done.resume_token is not None
    argv = ["checkpoints", "verify", "--storage", f"file:{tmp_path}", "--json"]
    assert await asyncio.to_thread(main, argv) == 0
    assert json.loads(capsys.readouterr().out)[0]["ok"] is True
    log = _log_file(tmp_path / "checkpoints")
    size = log.stat().st_size
    await host.run("c", message="two")
    with log.open("r+b") as f:  # what a crash mid-commit leaves: a record cut short
        f.truncate(log.stat().st_size - 7)
    assert await asyncio.to_thread(main, argv) == 1
    (report,) = json.loads(capsys.readouterr().out)
    assert report["checkpoint_id"] == done.resume_token.checkpoint_id
    assert 0 < report["torn_tail_bytes"] < log.stat().st_size - size
    assert await asyncio.to_thread(main, [*argv[:-1], done.resume_token.checkpoint_id]) == 1
    assert "torn tail" in capsys.readouterr().out


async def test_the_tree_of_a_checkpoint_with_thousands_of_nested_branch_points_renders() -> None:
    from checkflow.checkpoints import Checkpoint
    from checkflow.cli._tree import render_tree

    state = {"workflow_state": {}, "executor_states": {}, "edge_states": {},
             "messages": {"input": [], "pending": {}, "output": []}}
    checkpoint = Checkpoint("deep")
    for _ in range(1_500):  # each snapshot gets two children: the chain forks at every step
        parent = checkpoint.head_snapshot_id
        await checkpoint.commit_snapshot(state=state)
        if parent is not None:
            checkpoint.restart_from(parent)
            await checkpoint.commit_snapshot(state=state)
    lines = render_tree(checkpoint).splitlines()
    assert len(lines) == len(checkpoint.snapshots)
