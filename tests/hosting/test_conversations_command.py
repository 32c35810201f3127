"""``python -m checkflow conversations ls|show|unlock|recover`` and orphan checkpoints, on real
file stores written by a ``WorkflowHost`` (the operator's view of a server's storage)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hosting_flows import Gate

from checkflow.cli import main
from checkflow.errors import (
    CheckpointLostError,
    ConversationBusyError,
    ConversationNotFoundError,
)
from checkflow.hosting import (
    WorkflowHost,
    find_orphan_checkpoints,
    hosted_conversation,
    recover_conversation,
    unlock_conversation,
)
from checkflow.sessions import FileSessionStore
from checkflow.storage import FileCheckpointStorage


async def cli(*argv: str) -> int:
    """The command as an operator's shell runs it (its own event loop, in a thread)."""
    return await asyncio.to_thread(main, list(argv))


async def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert await cli(*argv, "--json") == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def url(tmp_path: Path) -> str:
    return f"file:{tmp_path}"


async def set_lease(tmp_path: Path, conversation_id: str, lease: dict[str, Any],
                    principal: str | None = None) -> None:
    """Record a lease as another server would have left it."""
    store = FileSessionStore(tmp_path / "sessions")
    session_id = (await hosted_conversation(store, conversation_id,
                                            principal=principal)).session_id
    session = await store.get(session_id)
    assert session is not None
    session.state["lease"] = lease
    await store.set(session, expected_version=session.version)


def dead_pid() -> int:
    """The pid of a process of this machine that has exited (reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


async def test_ls_lists_conversations_by_their_real_id_and_principal(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    await file_host.run("order-1", message="hello")
    await file_host.run("order-1", message="ASK alice", principal="alice")
    listed = await cli_json(capsys, "conversations", "ls", "--storage", url(tmp_path))
    assert [(c["conversation_id"], c["principal"]) for c in listed] == [
        ("order-1", None), ("order-1", "alice")]
    assert all(c["head_snapshot_id"] and c["lease"] is None for c in listed)
    assert await cli("conversations", "ls", "--storage", url(tmp_path)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("order-1  principal=-  head=")
    assert lines[1].startswith("order-1  principal=alice  head=")


async def test_show_names_head_status_pending_requests_and_lease(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    paused = await file_host.run("c1", message="ASK go", principal="bob")
    assert paused.resume_token is not None
    shown = await cli_json(capsys, "conversations", "show", "c1", "--principal", "bob",
                     "--storage", url(tmp_path))
    assert shown["head_snapshot_id"] == paused.resume_token.snapshot_id
    assert shown["status"] == "awaiting_responses"
    assert [r["request_id"] for r in shown["pending_requests"]] == list(paused.pending_requests)
    assert shown["lease"] is None and shown["lease_is_live"] is False
    await set_lease(tmp_path, "c1", {"owner": "web-7:41:ab12", "expires_at": time.time() + 300,
                                     "host": "web-7", "pid": 41}, principal="bob")
    assert await cli("conversations", "show", "c1", "--principal", "bob",
                 "--storage", url(tmp_path)) == 0
    text = capsys.readouterr().out
    assert "awaiting_responses" in text and "web-7:41:ab12 (expires in" in text
    assert await cli("conversations", "show", "c1", "--storage", url(tmp_path)) == 2
    assert "no conversation 'c1'" in capsys.readouterr().err  # bob's, not the anonymous one


async def test_unlock_refuses_a_live_lease_naming_its_owner_unless_forced(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    await file_host.run("c1", message="hi")
    await set_lease(tmp_path, "c1", {"owner": "web-7:41:ab12", "expires_at": time.time() + 300,
                                     "host": "web-7", "pid": 41})
    assert await cli("conversations", "unlock", "c1", "--storage", url(tmp_path)) == 2
    assert "web-7:41:ab12" in capsys.readouterr().err
    with pytest.raises(ConversationBusyError):  # still locked: the refusal changed nothing
        await file_host.run("c1", message="again")
    cleared = await cli_json(capsys, "conversations", "unlock", "c1", "--force",
                       "--storage", url(tmp_path))
    assert cleared["cleared"]["owner"] == "web-7:41:ab12"
    assert (await file_host.run("c1", message="again")).outputs == ["AGAIN"]


@pytest.mark.parametrize("kind", ["expired", "dead_owner_on_this_host"])
async def test_unlock_clears_a_lease_whose_owner_is_gone_without_force(
    kind: str, file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    from checkflow.hosting._lease import process_identity

    await file_host.run("c1", message="hi")
    if kind == "expired":
        lease = {"owner": "web-7:41:ab12", "expires_at": time.time() - 1, "host": "web-7"}
    else:
        if process_identity(os.getpid()) is None:
            pytest.skip("this system does not expose process identities")
        lease = {"owner": "here:1:dead", "expires_at": time.time() + 300,
                 "host": socket.gethostname(), "pid": dead_pid(), "process": "gone:1"}
    await set_lease(tmp_path, "c1", lease)
    listed = await cli_json(capsys, "conversations", "ls", "--storage", url(tmp_path))
    assert listed[0]["lease"]["owner"] == lease["owner"] and not listed[0]["lease_is_live"]
    assert await cli("conversations", "unlock", "c1", "--storage", url(tmp_path)) == 0
    assert capsys.readouterr().out.strip() == f"cleared the lease of {lease['owner']}"
    (after,) = await cli_json(capsys, "conversations", "ls", "--storage", url(tmp_path))
    assert after["lease"] is None
    assert await cli("conversations", "unlock", "c1", "--storage", url(tmp_path)) == 0
    assert capsys.readouterr().out.strip() == "no lease to clear"


async def test_unknown_conversations_are_an_error_for_every_subcommand(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    await file_host.run("c1", message="hi")
    for action in ("show", "unlock", "recover"):
        assert await cli("conversations", action, "nope", "--storage", url(tmp_path)) == 2
        assert "no conversation 'nope'" in capsys.readouterr().err
    store = FileSessionStore(tmp_path / "sessions")
    with pytest.raises(ConversationNotFoundError):
        await unlock_conversation(store, "nope")


async def lose_the_last_turn(host: WorkflowHost, tmp_path: Path) -> tuple[str, str]:
    """Two acknowledged turns, then storage loses the second (its log restored to the first).

    Returns (the head storage still has, the acknowledged head it lost).
    """
    first = await host.run("c1", message="ASK go")
    assert first.resume_token is not None
    folder = tmp_path / "checkpoints"
    saved = tmp_path / "saved"
    shutil.copytree(folder, saved)
    (request_id,) = first.pending_requests
    second = await host.run("c1", responses={request_id: True})
    assert second.outputs == ["approved"] and second.resume_token is not None
    shutil.rmtree(folder)
    shutil.copytree(saved, folder)
    return first.resume_token.snapshot_id, second.resume_token.snapshot_id


async def test_recover_repoints_a_conversation_at_the_head_storage_still_has(
    file_host: WorkflowHost, workflow: Any, tmp_path: Path, capsys: Any
) -> None:
    kept, lost = await lose_the_last_turn(file_host, tmp_path)
    fresh = WorkflowHost(workflow, session_store=FileSessionStore(tmp_path / "sessions"),
                         checkpoint_storage=FileCheckpointStorage(tmp_path / "checkpoints"))
    with pytest.raises(CheckpointLostError) as lost_error:  # never a silent fresh start
        await fresh.get_conversation("c1")
    assert lost_error.value.expected_head_snapshot_id == lost
    assert lost_error.value.actual_head_snapshot_id == kept
    shown = await cli_json(capsys, "conversations", "show", "c1", "--storage", url(tmp_path))
    assert shown["head_snapshot_id"] == lost and shown["status"] == "lost"
    assert lost in shown["problem"]
    recovered = await cli_json(capsys, "conversations", "recover", "c1", "--storage", url(tmp_path))
    assert recovered["resume_token"]["snapshot_id"] == kept
    state = await fresh.get_conversation("c1")
    assert state.resume_token is not None and state.resume_token.snapshot_id == kept
    assert state.status.value == "awaiting_responses"  # the answer must be given again
    (request_id,) = state.pending_requests
    assert (await fresh.run("c1", responses={request_id: False})).outputs == ["rejected"]


async def test_recover_is_refused_while_the_conversation_runs(
    gate: Gate, file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    await file_host.run("c1", message="hi")
    running = asyncio.ensure_future(file_host.run("c1", message="hold"))
    await asyncio.wait_for(gate.entered.wait(), 10)
    try:
        with pytest.raises(ConversationBusyError):
            await file_host.recover("c1")
        with pytest.raises(ConversationBusyError):  # another process: the session's lease
            await recover_conversation(FileSessionStore(tmp_path / "sessions"),
                                       FileCheckpointStorage(tmp_path / "checkpoints"), "c1")
        assert await cli("conversations", "recover", "c1", "--storage", url(tmp_path)) == 2
        assert "busy" in capsys.readouterr().err
    finally:
        gate.release.set()
        assert (await asyncio.wait_for(running, 10)).outputs == ["HOLD"]
    token = await file_host.recover("c1")  # nothing lost: recover is a no-op re-point
    state = await file_host.get_conversation("c1")
    assert state.resume_token == token


async def test_orphans_are_host_checkpoints_nothing_references_and_no_lease_holds(
    gate: Gate, file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    from checkflow.hosting._keys import ConversationKey

    await file_host.run("kept", message="hi")
    await file_host.run("deleted", message="hi")
    await file_host.delete("deleted")
    storage = file_host.checkpoint_storage
    # what a server killed during a first turn leaves: a checkpoint its session never named
    abandoned = ConversationKey(None, "deleted").checkpoint_id(0)
    workflow = await file_host.workflow()
    left = workflow.create_checkpoint(checkpoint_id=abandoned, checkpoint_storage=storage)
    await workflow.run("left behind", checkpoint=left)
    unrelated = workflow.create_checkpoint(checkpoint_id="mine", checkpoint_storage=storage)
    await workflow.run("not a host's", checkpoint=unrelated)
    running = asyncio.ensure_future(file_host.run("first-turn", message="hold"))
    await asyncio.wait_for(gate.entered.wait(), 10)
    try:
        # the running first turn holds its lease: its checkpoint is never an orphan
        assert await cli_json(capsys, "conversations", "ls", "--orphans",
                        "--storage", url(tmp_path)) == [abandoned]
        would = await cli_json(capsys, "checkpoints", "prune", "--orphans", "--dry-run",
                         "--storage", url(tmp_path))
        assert would == {"would_remove": [abandoned]}
        assert abandoned in await storage.list_checkpoint_ids()
        removed = await cli_json(capsys, "checkpoints", "prune", "--orphans",
                           "--storage", url(tmp_path))
        assert removed == {"removed": [abandoned]}
    finally:
        gate.release.set()
        await asyncio.wait_for(running, 10)
    sessions = file_host.session_store
    assert await find_orphan_checkpoints(sessions, storage) == []
    assert sorted(await storage.list_checkpoint_ids()) == sorted(
        [ConversationKey(None, "kept").checkpoint_id(0),
         ConversationKey(None, "first-turn").checkpoint_id(0), "mine"])
    assert (await file_host.get_conversation("kept")).outputs == ["HI"]


@pytest.mark.parametrize("argv", [
    ["checkpoints", "prune"],
    ["checkpoints", "prune", "cp-1", "--orphans"],
    ["checkpoints", "prune", "--orphans", "--keep", "s1"],
])
def test_prune_needs_one_id_or_orphans(argv: list[str], tmp_path: Path, capsys: Any) -> None:
    assert main([*argv, "--storage", url(tmp_path)]) == 2
    assert "prune" in capsys.readouterr().err


# -- a conversation id wherever a checkpoint id is taken ------------------------------------


async def test_every_checkpoint_command_takes_the_conversation_id(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    paused = await file_host.run("order-1", message="ASK go")
    assert paused.resume_token is not None
    checkpoint_id = paused.resume_token.checkpoint_id
    for action in (["show"], ["tree"], ["pending"], ["export"], ["verify"],
                   ["prune", "--dry-run"]):
        by_conversation = await cli_json(capsys, "checkpoints", *action, "order-1",
                                         "--storage", url(tmp_path))
        by_checkpoint = await cli_json(capsys, "checkpoints", *action, checkpoint_id,
                                       "--storage", url(tmp_path))
        assert by_conversation == by_checkpoint, action
    shown = await cli_json(capsys, "checkpoints", "show", "order-1", "--storage", url(tmp_path))
    assert shown["checkpoint_id"] == checkpoint_id
    assert shown["head_snapshot_id"] == paused.resume_token.snapshot_id


async def test_a_principals_conversation_needs_principal_and_the_error_says_what_was_tried(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    done = await file_host.run("c1", message="hi", principal="alice")
    assert done.resume_token is not None
    assert await cli("checkpoints", "show", "c1", "--storage", url(tmp_path)) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == ("checkflow: error: 'c1' is neither a checkpoint nor a conversation of no "
                    "principal in this storage (a principal's conversation needs --principal)")
    shown = await cli_json(capsys, "checkpoints", "show", "c1", "--principal", "alice",
                           "--storage", url(tmp_path))
    assert shown["checkpoint_id"] == done.resume_token.checkpoint_id
    assert await cli("checkpoints", "tree", "c1", "--principal", "bob",
                     "--storage", url(tmp_path)) == 2
    assert capsys.readouterr().err == (
        "checkflow: error: 'c1' is not a conversation of principal 'bob' in this storage\n")
    assert await cli("checkpoints", "verify", "--principal", "alice",
                     "--storage", url(tmp_path)) == 2
    assert "needs an ID" in capsys.readouterr().err


async def test_an_exact_checkpoint_id_wins_over_a_conversation_of_that_id(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    workflow = await file_host.workflow()
    mine = workflow.create_checkpoint(checkpoint_id="mine",
                                      checkpoint_storage=file_host.checkpoint_storage)
    await workflow.run("not a host's", checkpoint=mine)
    await file_host.run("mine", message="hosted")
    shown = await cli_json(capsys, "checkpoints", "show", "mine", "--storage", url(tmp_path))
    assert shown["checkpoint_id"] == "mine"


async def test_a_conversation_id_shows_its_checkpoint_at_the_conversations_head(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    good = await file_host.run("c", message="one")
    await file_host.run("c", message="boom")  # failed: storage's head is now ahead
    assert good.resume_token is not None
    shown = await cli_json(capsys, "checkpoints", "show", "c", "--storage", url(tmp_path))
    assert shown["head_snapshot_id"] == good.resume_token.snapshot_id
    assert shown["storage_head_snapshot_id"] != good.resume_token.snapshot_id


async def test_a_deleted_conversation_names_no_checkpoint(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    await file_host.run("gone", message="hi")
    await file_host.delete("gone")
    assert await cli("checkpoints", "show", "gone", "--storage", url(tmp_path)) == 2
    assert capsys.readouterr().err == (
        "checkflow: error: 'gone' is not a checkpoint, and conversation 'gone' of no principal "
        "has no checkpoint (it was deleted, or its first turn has not committed)\n")


async def test_prune_keeps_the_conversations_head_when_storage_is_on_another_branch(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    first = await file_host.run("c", message="one")
    second = await file_host.run("c", message="two")
    assert first.resume_token is not None and second.resume_token is not None
    failed = await file_host.run("c", message="boom",
                                 from_snapshot=first.resume_token.snapshot_id)
    assert failed.status.value == "failed"  # storage's head: the failed turn, off "two"
    removed = (await cli_json(capsys, "checkpoints", "prune", "c",
                              "--storage", url(tmp_path)))["removed"]
    assert second.resume_token.snapshot_id not in removed
    assert (await file_host.get_conversation("c")).outputs == ["ONE", "TWO"]


# -- what ls shows --------------------------------------------------------------------------


async def test_checkpoints_ls_names_the_conversation_and_principal_of_each_checkpoint(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    anonymous = await file_host.run("order-1", message="hi")
    alices = await file_host.run("order-1", message="hi", principal="alice")
    workflow = await file_host.workflow()
    await workflow.run("x", checkpoint=workflow.create_checkpoint(
        checkpoint_id="mine", checkpoint_storage=file_host.checkpoint_storage))
    assert anonymous.resume_token is not None and alices.resume_token is not None
    a, b = anonymous.resume_token, alices.resume_token
    assert await cli("checkpoints", "ls", "--storage", url(tmp_path)) == 0
    assert sorted(capsys.readouterr().out.splitlines()) == sorted([
        f"{a.checkpoint_id}  conversation=order-1  principal=-",
        f"{b.checkpoint_id}  conversation=order-1  principal=alice", "mine"])
    ids = await cli_json(capsys, "checkpoints", "ls", "--storage", url(tmp_path))
    assert ids == sorted([a.checkpoint_id, b.checkpoint_id, "mine"])  # as scripts parse it
    rows = await cli_json(capsys, "checkpoints", "ls", "-l", "--storage", url(tmp_path))
    assert {r["checkpoint_id"]: (r["conversation_id"], r["principal"], r["head_snapshot_id"])
            for r in rows} == {a.checkpoint_id: ("order-1", None, a.snapshot_id),
                               b.checkpoint_id: ("order-1", "alice", b.snapshot_id),
                               "mine": (None, None, None)}
    assert await cli("checkpoints", "ls", "-l", "--storage", url(tmp_path)) == 0
    assert f"principal=alice  head={b.snapshot_id}" in capsys.readouterr().out


async def test_deleted_conversations_are_listed_only_with_deleted_and_marked(
    file_host: WorkflowHost, tmp_path: Path, capsys: Any
) -> None:
    await file_host.run("kept", message="hi")
    await file_host.run("gone", message="hi")
    await file_host.delete("gone")
    listed = await cli_json(capsys, "conversations", "ls", "--storage", url(tmp_path))
    assert [c["conversation_id"] for c in listed] == ["kept"]
    assert listed[0]["deleted"] is False
    assert await cli("conversations", "ls", "--storage", url(tmp_path)) == 0
    assert "gone" not in capsys.readouterr().out
    every = await cli_json(capsys, "conversations", "ls", "--deleted", "--storage", url(tmp_path))
    assert [(c["conversation_id"], c["deleted"]) for c in every] == [
        ("gone", True), ("kept", False)]
    assert await cli("conversations", "ls", "--deleted", "--storage", url(tmp_path)) == 0
    assert "gone  principal=-  head=-  deleted" in capsys.readouterr().out.splitlines()
    assert await cli("checkpoints", "ls", "--storage", url(tmp_path)) == 0
    assert "conversation=gone" not in capsys.readouterr().out
    shown = await cli_json(capsys, "conversations", "show", "gone", "--storage", url(tmp_path))
    assert shown["status"] == "deleted"
    await file_host.run("gone", message="again")  # the same id, a conversation again
    listed = await cli_json(capsys, "conversations", "ls", "--storage", url(tmp_path))
    assert [c["conversation_id"] for c in listed] == ["gone", "kept"]
