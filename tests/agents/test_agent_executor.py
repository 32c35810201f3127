"""AgentExecutor: an agent as a workflow node whose session lives in the snapshot."""

from __future__ import annotations

import asyncio

import pytest
from agent_workflow_samples import (
    PUBLISH,
    AskTwiceAgent,
    BarrierAgent,
    WordStreamingAgent,
    build_chain,
    build_publisher,
    history_texts,
    run_fresh,
)

from checkflow.agents import (
    AgentExecutor,
    AgentExecutorRequest,
    AgentResponse,
    AgentRunUpdateEvent,
    ChatMessage,
    ScriptedAgent,
)
from checkflow.errors import AgentError, WorkflowRunError
from checkflow.sessions import AgentSession
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import ExecutorInvokedEvent, RunStatus, WorkflowBuilder


def invoked(result) -> list[str]:
    return [e.executor_id for e in result.events if isinstance(e, ExecutorInvokedEvent)]


async def test_the_session_is_an_agent_session_at_executor_states_id_session():
    result = await build_chain().run("owls")

    states = result.checkpoint.head_snapshot.state["executor_states"]
    writer = states["writer"]["session"]
    assert isinstance(writer, AgentSession)
    assert history_texts(writer) == ["user:owls", "assistant:draft one"]
    assert history_texts(states["editor"]["session"]) == [
        "user:draft one",
        "assistant:edited one",
    ]
    assert [o.text for o in result.get_outputs()] == ["edited one"]


async def test_the_session_continues_across_runs_of_one_checkpoint():
    workflow = build_chain()
    checkpoint = workflow.create_checkpoint()
    await workflow.run("owls", checkpoint=checkpoint)
    first_id = checkpoint.head_snapshot.state["executor_states"]["writer"]["session"].session_id

    result = await workflow.run("bats", checkpoint=checkpoint)

    writer = checkpoint.head_snapshot.state["executor_states"]["writer"]["session"]
    assert writer.session_id == first_id
    assert history_texts(writer)[2:] == ["user:bats", "assistant:draft two"]
    assert [o.text for o in result.get_outputs()] == ["edited two"]


async def test_the_session_survives_a_process_restart_from_file_storage(tmp_path):
    storage = FileCheckpointStorage(tmp_path)
    workflow = build_chain()
    checkpoint = workflow.create_checkpoint(checkpoint_id="chain-1", checkpoint_storage=storage)
    await workflow.run("owls", checkpoint=checkpoint)
    session_id = checkpoint.head_snapshot.state["executor_states"]["writer"]["session"].session_id

    there = run_fresh("chain-turn", str(tmp_path), "chain-1", "bats")

    assert there["session_id"] == session_id
    assert there["history"] == [
        "user:owls",
        "assistant:draft one",
        "user:bats",
        "assistant:draft two",
    ]
    assert there["outputs"] == ["edited two"]


async def test_two_concurrent_checkpoints_of_one_workflow_have_independent_sessions():
    barrier = asyncio.Barrier(2)  # both runs are inside the agent at the same time
    node = AgentExecutor(BarrierAgent("echo", barrier), output_response=True)
    workflow = WorkflowBuilder(node).build()
    first, second = workflow.create_checkpoint(), workflow.create_checkpoint()

    results = await asyncio.gather(
        workflow.run("one", checkpoint=first), workflow.run("two", checkpoint=second)
    )

    assert [r.get_outputs()[0].text for r in results] == ["echo one", "echo two"]
    sessions = [
        c.head_snapshot.state["executor_states"]["echo"]["session"] for c in (first, second)
    ]
    assert sessions[0].session_id != sessions[1].session_id
    assert history_texts(sessions[0]) == ["user:one", "assistant:echo one"]
    assert history_texts(sessions[1]) == ["user:two", "assistant:echo two"]


async def test_resuming_a_two_agent_chain_after_the_first_agent_runs_only_the_second():
    workflow = build_chain()
    checkpoint = workflow.create_checkpoint()
    first = await workflow.run("owls", checkpoint=checkpoint)
    assert invoked(first) == ["writer", "editor"]
    after_writer = next(s for s in checkpoint.snapshots if s.metadata.get("superstep") == 1)

    checkpoint.restart_from(after_writer.snapshot_id)
    again = await workflow.run(checkpoint=checkpoint)

    assert invoked(again) == ["editor"]
    assert [o.text for o in again.get_outputs()] == ["edited one"]
    states = checkpoint.head_snapshot.state["executor_states"]
    assert history_texts(states["writer"]["session"]) == ["user:owls", "assistant:draft one"]
    assert checkpoint.head_snapshot.parent_snapshot_id == after_writer.snapshot_id


async def test_a_user_input_request_becomes_a_workflow_request_under_its_own_id():
    result = await build_publisher().run("owls")

    assert result.status is RunStatus.AWAITING_RESPONSES
    request = result.pending_requests["publish"]
    assert request.data == PUBLISH
    assert request.source_executor_id == "writer"
    assert result.get_outputs() == []


async def test_the_answer_goes_back_to_the_agent_as_a_function_result():
    workflow = build_publisher()
    paused = await workflow.run("owls")

    done = await workflow.run(responses={"publish": True}, checkpoint=paused.checkpoint)

    assert [o.text for o in done.get_outputs()] == ["published"]
    session = paused.checkpoint.head_snapshot.state["executor_states"]["writer"]["session"]
    assert history_texts(session) == [
        "user:owls",
        "assistant:",
        "tool:publish=True",
        "assistant:published",
    ]


async def test_an_agent_asking_two_questions_resumes_once_both_are_answered():
    node = AgentExecutor(AskTwiceAgent("asker"), output_response=True)
    workflow = WorkflowBuilder(node).build()
    paused = await workflow.run("write")
    assert set(paused.pending_requests) == {"title", "tone"}

    half = await workflow.run(responses={"title": "Owls"}, checkpoint=paused.checkpoint)
    assert half.get_outputs() == []
    assert set(half.pending_requests) == {"tone"}

    done = await workflow.run(responses={"tone": "dry"}, checkpoint=paused.checkpoint)
    assert [o.text for o in done.get_outputs()] == ["title=Owls tone=dry"]


async def test_explicit_requests_and_upstream_responses_are_accepted_as_input():
    node = AgentExecutor(ScriptedAgent("a", ["one", "two"]), id="a", output_response=True)
    workflow = WorkflowBuilder(node).build()
    checkpoint = workflow.create_checkpoint()
    request = AgentExecutorRequest([ChatMessage("system", "be brief"), ChatMessage("user", "hi")])
    await workflow.run(request, checkpoint=checkpoint)
    upstream = AgentResponse(messages=[ChatMessage("assistant", "from upstream")])
    await workflow.run(upstream, checkpoint=checkpoint)

    session = checkpoint.head_snapshot.state["executor_states"]["a"]["session"]
    assert history_texts(session) == [
        "system:be brief",
        "user:hi",
        "assistant:one",
        "user:from upstream",
        "assistant:two",
    ]


async def test_an_agent_error_fails_the_run_and_keeps_the_last_committed_session():
    node = AgentExecutor(ScriptedAgent("short", ["only reply"]), id="short")
    workflow = WorkflowBuilder(node).build()
    checkpoint = workflow.create_checkpoint()
    await workflow.run("first", checkpoint=checkpoint)
    head = checkpoint.head_snapshot_id

    with pytest.raises(WorkflowRunError) as caught:
        await workflow.run("second", checkpoint=checkpoint)

    assert caught.value.executor_id == "short"
    assert isinstance(caught.value.__cause__, AgentError)
    assert checkpoint.get_snapshot(head).state["executor_states"]["short"]["session"]
    entry = checkpoint.head_snapshot  # only the input was accepted after the good head
    assert entry.parent_snapshot_id == head
    assert history_texts(entry.state["executor_states"]["short"]["session"]) == [
        "user:first",
        "assistant:only reply",
    ]


async def test_the_executor_object_holds_no_session():
    agent = ScriptedAgent("writer", ["x"])  # one reply: a reused session has none left
    node = AgentExecutor(agent, output_response=True)
    workflow = WorkflowBuilder(node).build()

    runs = [await workflow.run(text) for text in ("owls", "bats")]  # a fresh checkpoint each

    assert [[o.text for o in r.get_outputs()] for r in runs] == [["x"], ["x"]]
    for held in (vars(node), vars(agent)):
        assert not any(isinstance(v, AgentSession) for v in held.values())


def test_the_id_defaults_to_the_agents_name_and_may_be_given_positionally():
    agent = ScriptedAgent("writer", ["x"])
    assert AgentExecutor(agent).id == "writer"
    assert AgentExecutor(agent, "editor").id == AgentExecutor(agent, id="editor").id == "editor"


async def test_a_streaming_executor_emits_each_update_and_sends_the_whole_response():
    node = AgentExecutor(WordStreamingAgent("echo"), output_response=True, stream=True)
    workflow = WorkflowBuilder(node).build()

    result = await workflow.run("two owls")

    updates = [e for e in result.events if isinstance(e, AgentRunUpdateEvent)]
    assert [u.update.text for u in updates] == ["echo", " two", " owls"]
    assert {u.executor_id for u in updates} == {"echo"}
    assert [o.text for o in result.get_outputs()] == ["echo two owls"]
    session = result.checkpoint.head_snapshot.state["executor_states"]["echo"]["session"]
    assert history_texts(session) == ["user:two owls", "assistant:echo two owls"]
