"""WorkflowHost: conversations, their checkpoints in sessions, branches, tokens and failures."""

from __future__ import annotations

import pytest
from hosting_flows import Order, build

from checkflow.checkpoints import CheckpointReference
from checkflow.errors import (
    ConversationNotFoundError,
    GraphSignatureMismatchError,
    InvalidMessageError,
    SnapshotNotFoundError,
    StaleResumeTokenError,
)
from checkflow.hosting import ResumeToken, WorkflowHost
from checkflow.hosting._keys import ConversationKey
from checkflow.hosting._lease import LeaseManager
from checkflow.sessions import AgentSession
from checkflow.workflows import RunStatus, Workflow


async def test_a_paused_conversation_is_answered_and_completes(file_host: WorkflowHost) -> None:
    paused = await file_host.run("c-1", message="ask twice")
    assert paused.status is RunStatus.AWAITING_RESPONSES
    (request_id,) = paused.pending_requests
    done = await file_host.run("c-1", responses={request_id: True})
    assert done.status is RunStatus.IDLE
    assert done.outputs == ["approved"]


async def test_the_stored_session_holds_a_checkpoint_reference_to_the_head(
    file_host: WorkflowHost,
) -> None:
    result = await file_host.run("c-1", message="hello")
    session = await file_host.session_store.get(ConversationKey(None, "c-1").session_id)
    assert session is not None
    reference = session.state["checkpoint"]
    assert isinstance(reference, CheckpointReference)
    assert result.resume_token is not None
    assert reference.checkpoint_id == result.resume_token.checkpoint_id
    assert reference.head_snapshot_id == result.resume_token.snapshot_id
    assert "lease" not in session.state
    assert await file_host.checkpoint_storage.list_checkpoint_ids() == [reference.checkpoint_id]


async def test_a_new_host_on_the_same_files_continues_the_conversation(
    file_host: WorkflowHost,
) -> None:
    paused = await file_host.run("c-1", message="ask")
    (request_id,) = paused.pending_requests
    again = WorkflowHost(
        build(),
        session_store=file_host.session_store,
        checkpoint_storage=file_host.checkpoint_storage,
    )
    done = await again.run("c-1", responses={request_id: False})
    assert done.outputs == ["rejected"]


async def test_a_json_object_becomes_the_most_specific_input_type(host: WorkflowHost) -> None:
    result = await host.run("c-1", message={"item": "tea", "quantity": 2})
    assert result.outputs == ["2 X TEA"]


async def test_an_already_typed_message_is_accepted(host: WorkflowHost) -> None:
    result = await host.run("c-1", message=Order("tea", 3))
    assert result.outputs == ["3 X TEA"]


async def test_a_message_no_handler_accepts_lists_the_accepted_types(host: WorkflowHost) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        await host.run("c-1", message=42)
    assert caught.value.accepted_types == ["hosting_flows.Order", "str"]


async def test_a_new_conversation_without_a_message_is_refused(host: WorkflowHost) -> None:
    with pytest.raises(InvalidMessageError):
        await host.run("c-1")


async def test_running_without_input_re_reports_the_pending_requests(host: WorkflowHost) -> None:
    paused = await host.run("c-1", message="ask")
    again = await host.run("c-1")
    assert again.status is RunStatus.AWAITING_RESPONSES
    assert list(again.pending_requests) == list(paused.pending_requests)


async def test_the_conversation_view_has_all_outputs_so_far(host: WorkflowHost) -> None:
    await host.run("c-1", message="one")
    last = await host.run("c-1", message="two")
    state = await host.get_conversation("c-1")
    assert state.outputs == ["ONE", "TWO"]
    assert state.status is RunStatus.IDLE
    assert state.resume_token == last.resume_token


async def test_an_unknown_conversation_is_not_found(host: WorkflowHost) -> None:
    with pytest.raises(ConversationNotFoundError):
        await host.get_conversation("nobody")


async def test_a_current_resume_token_is_accepted(host: WorkflowHost) -> None:
    first = await host.run("c-1", message="one")
    second = await host.run("c-1", message="two", resume_token=first.resume_token)
    assert second.outputs == ["TWO"]


async def test_a_stale_resume_token_is_refused_and_nothing_runs(host: WorkflowHost) -> None:
    first = await host.run("c-1", message="one")
    second = await host.run("c-1", message="two")
    with pytest.raises(StaleResumeTokenError):
        await host.run("c-1", message="three", resume_token=first.resume_token)
    state = await host.get_conversation("c-1")
    assert state.resume_token == second.resume_token
    assert state.outputs == ["ONE", "TWO"]


async def test_a_resume_token_for_a_conversation_that_does_not_exist_is_stale(
    host: WorkflowHost,
) -> None:
    with pytest.raises(StaleResumeTokenError):
        await host.run("c-1", message="one", resume_token=ResumeToken("cp", "s"))


async def test_from_snapshot_branches_and_keeps_the_old_tip(host: WorkflowHost) -> None:
    first = await host.run("c-1", message="one")
    second = await host.run("c-1", message="two")
    assert first.resume_token and second.resume_token
    branched = await host.run("c-1", message="other", from_snapshot=first.resume_token.snapshot_id)
    state = await host.get_conversation("c-1")
    assert state.checkpoint is not None
    tips = {s.snapshot_id for s in state.checkpoint.tips()}
    assert second.resume_token.snapshot_id in tips
    assert branched.resume_token is not None and branched.resume_token.snapshot_id in tips
    assert len(tips) == 2
    assert state.outputs == ["ONE", "OTHER"]


async def test_from_an_unknown_snapshot_is_not_found(host: WorkflowHost) -> None:
    await host.run("c-1", message="one")
    with pytest.raises(SnapshotNotFoundError):
        await host.run("c-1", message="two", from_snapshot="no-such-snapshot")


async def test_a_failed_first_run_reports_failed_and_the_next_run_starts_fresh(
    host: WorkflowHost,
) -> None:
    failed = await host.run("c-1", message="boom")
    assert failed.status is RunStatus.FAILED
    assert "exploded" in str(failed.error.__cause__ if failed.error else "")
    assert failed.resume_token is None
    good = await host.run("c-1", message="fine")
    assert good.status is RunStatus.IDLE
    assert good.outputs == ["FINE"]
    state = await host.get_conversation("c-1")
    assert state.outputs == ["FINE"]


async def test_a_failed_later_run_keeps_the_last_good_head(host: WorkflowHost) -> None:
    good = await host.run("c-1", message="one")
    failed = await host.run("c-1", message="boom")
    assert failed.status is RunStatus.FAILED
    assert failed.resume_token == good.resume_token
    after = await host.run("c-1", message="two", resume_token=good.resume_token)
    assert after.outputs == ["TWO"]
    assert (await host.get_conversation("c-1")).outputs == ["ONE", "TWO"]


async def test_a_reference_whose_checkpoint_is_gone_starts_a_fresh_conversation(
    host: WorkflowHost,
) -> None:
    first = await host.run("c-1", message="one")
    assert first.resume_token is not None
    await host.checkpoint_storage.delete(first.resume_token.checkpoint_id)
    again = await host.run("c-1", message="two")
    assert again.status is RunStatus.IDLE
    assert again.resume_token is not None
    assert again.resume_token.checkpoint_id != first.resume_token.checkpoint_id
    assert (await host.get_conversation("c-1")).outputs == ["TWO"]


async def test_a_deleted_conversation_comes_back_with_a_new_checkpoint_id(
    host: WorkflowHost,
) -> None:
    first = await host.run("c-1", message="one")
    await host.delete_conversation("c-1")
    with pytest.raises(ConversationNotFoundError):
        await host.get_conversation("c-1")
    again = await host.run("c-1", message="two")
    assert first.resume_token and again.resume_token
    assert again.resume_token.checkpoint_id != first.resume_token.checkpoint_id
    assert await host.checkpoint_storage.list_checkpoint_ids() == [again.resume_token.checkpoint_id]


async def test_deleting_an_unknown_conversation_is_not_found_and_writes_nothing(
    host: WorkflowHost,
) -> None:
    with pytest.raises(ConversationNotFoundError):
        await host.delete_conversation("nobody")
    assert await host.session_store.get(ConversationKey(None, "nobody").session_id) is None


async def test_a_changed_graph_is_refused_with_both_hashes(host: WorkflowHost) -> None:
    await host.run("c-1", message="one")
    changed = WorkflowHost(
        build(audited=True),
        session_store=host.session_store,
        checkpoint_storage=host.checkpoint_storage,
    )
    with pytest.raises(GraphSignatureMismatchError) as caught:
        await changed.run("c-1", message="two")
    workflow = await host.workflow()
    assert caught.value.actual == workflow.graph_signature_hash
    assert caught.value.expected == (await changed.workflow()).graph_signature_hash


async def test_a_changed_graph_starts_afresh_and_keeps_the_old_checkpoint_when_asked(
    host: WorkflowHost,
) -> None:
    first = await host.run("c-1", message="one")
    changed = WorkflowHost(
        build(audited=True),
        session_store=host.session_store,
        checkpoint_storage=host.checkpoint_storage,
        on_signature_mismatch="new_checkpoint",
    )
    again = await changed.run("c-1", message="two")
    assert again.outputs == ["TWO"]
    assert first.resume_token and again.resume_token
    assert again.resume_token.checkpoint_id != first.resume_token.checkpoint_id
    assert set(await host.checkpoint_storage.list_checkpoint_ids()) == {
        first.resume_token.checkpoint_id,
        again.resume_token.checkpoint_id,
    }
    assert (await changed.get_conversation("c-1")).outputs == ["TWO"]


async def test_an_unknown_mismatch_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="on_signature_mismatch"):
        WorkflowHost(build(), on_signature_mismatch="ignore")  # type: ignore[arg-type]


async def test_principals_with_equal_conversation_ids_never_share_a_checkpoint(
    host: WorkflowHost,
) -> None:
    alice = await host.run("c-1", message="alice", principal="alice")
    bob = await host.run("c-1", message="bob", principal="bob")
    assert alice.resume_token and bob.resume_token
    assert alice.resume_token.checkpoint_id != bob.resume_token.checkpoint_id
    assert (await host.get_conversation("c-1", principal="alice")).outputs == ["ALICE"]
    assert (await host.get_conversation("c-1", principal="bob")).outputs == ["BOB"]


async def test_another_principals_conversation_is_not_found(host: WorkflowHost) -> None:
    await host.run("c-1", message="secret", principal="alice")
    with pytest.raises(ConversationNotFoundError):
        await host.get_conversation("c-1", principal="mallory")
    with pytest.raises(ConversationNotFoundError):
        await host.delete_conversation("c-1", principal="mallory")
    assert (await host.get_conversation("c-1", principal="alice")).outputs == ["SECRET"]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync factory", "async factory"])
async def test_a_target_factory_is_resolved_once(is_async: bool) -> None:
    calls: list[int] = []

    def factory() -> Workflow:
        calls.append(1)
        return build()

    async def async_factory() -> Workflow:
        return factory()

    host = WorkflowHost(async_factory if is_async else factory)
    await host.run("a", message="x")
    await host.run("b", message="y")
    assert calls == [1]


async def test_a_builder_target_is_built() -> None:
    from hosting_flows import Shout

    from checkflow.workflows import WorkflowBuilder

    shout = Shout("only")
    host = WorkflowHost(WorkflowBuilder(start_executor=shout))
    result = await host.run("a", message="x")
    assert result.status is RunStatus.IDLE


async def test_a_target_of_the_wrong_kind_is_refused() -> None:
    host = WorkflowHost(lambda: 42)
    with pytest.raises(TypeError, match="Workflow"):
        await host.run("a", message="x")


async def test_running_an_idle_conversation_without_input_changes_nothing(
    host: WorkflowHost,
) -> None:
    done = await host.run("c-1", message="one")
    again = await host.run("c-1")
    assert again.status is RunStatus.IDLE
    assert again.outputs == []
    assert again.resume_token == done.resume_token
    state = await host.get_conversation("c-1")
    assert state.checkpoint is not None and len(state.checkpoint.snapshots) == 4


REFUSED_FIRST_REQUESTS = {
    "stale resume token": ({"message": "one", "resume_token": ResumeToken("cp", "s")},
                           StaleResumeTokenError),
    "unknown from_snapshot": ({"message": "one", "from_snapshot": "nope"},
                              SnapshotNotFoundError),
    "nothing to resume": ({}, InvalidMessageError),
}


@pytest.mark.parametrize("refusal", REFUSED_FIRST_REQUESTS, ids=list(REFUSED_FIRST_REQUESTS))
async def test_a_refused_first_request_leaves_no_session_behind(
    file_host: WorkflowHost, refusal: str
) -> None:
    options, error = REFUSED_FIRST_REQUESTS[refusal]
    with pytest.raises(error):
        await file_host.run("c-1", **options)
    assert await file_host.session_store.get(ConversationKey(None, "c-1").session_id) is None
    with pytest.raises(ConversationNotFoundError):
        await file_host.get_conversation("c-1")
    assert (await file_host.run("c-1", message="later")).outputs == ["LATER"]


async def test_a_refused_request_keeps_the_session_of_an_existing_conversation(
    host: WorkflowHost,
) -> None:
    first = await host.run("c-1", message="one")
    with pytest.raises(SnapshotNotFoundError):
        await host.run("c-1", message="two", from_snapshot="nope")
    state = await host.get_conversation("c-1")
    assert state.resume_token == first.resume_token


async def test_a_created_session_written_meanwhile_is_kept_when_its_lease_is_discarded(
    host: WorkflowHost,
) -> None:
    leases = LeaseManager(host.session_store, owner="this-host", lease_seconds=60)
    key = ConversationKey(None, "c-1")
    lease = await leases.acquire(key)
    assert lease.created
    newer = AgentSession(key.session_id, {"generation": 7})
    await host.session_store.set(newer, expected_version=lease.session.version)
    await lease.release(discard=True)
    kept = await host.session_store.get(key.session_id)
    assert kept is not None and kept.state == {"generation": 7}
