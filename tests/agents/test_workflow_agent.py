"""WorkflowAgent: a workflow behind the Agent protocol, its checkpoint kept in the session."""

from __future__ import annotations

import asyncio

import pytest
from agent_workflow_samples import (
    WordStreamingAgent,
    build_chain,
    build_publisher,
    history_texts,
    run_fresh,
)

from checkflow.agents import (
    AgentExecutor,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    WorkflowAgent,
)
from checkflow.checkpoints import Checkpoint, CheckpointReference
from checkflow.errors import (
    AgentError,
    InvalidResponseError,
    WorkflowRunError,
    WorkflowValidationError,
)
from checkflow.sessions import FileSessionStore
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage
from checkflow.workflows import Executor, WorkflowBuilder, WorkflowContext, handler, workflow


def answer(call_id: str, result: object) -> ChatMessage:
    return ChatMessage("tool", [FunctionResultContent(call_id, result)])


async def test_a_paused_run_returns_pending_requests_as_request_info_calls():
    agent = build_publisher().as_agent(name="publisher")
    session = agent.create_session()

    response = await agent.run("write about owls", session=session)

    assert response.function_calls == [
        FunctionCallContent("publish", "request_info", {"question": "publish the draft?"})
    ]
    assert response.author_name == "publisher"


async def test_a_two_turn_conversation_pauses_for_a_human_and_resumes_via_function_results():
    agent = build_publisher().as_agent()
    session = agent.create_session()
    await agent.run("write about owls", session=session)

    response = await agent.run(answer("publish", True), session=session)

    assert response.text == "published"
    assert response.function_calls == []
    assert history_texts(session) == [
        "user:write about owls",
        "assistant:",
        "tool:publish=True",
        "assistant:published",
    ]


async def test_without_storage_the_session_holds_the_whole_checkpoint():
    agent = build_publisher().as_agent()
    session = agent.create_session()
    await agent.run("write about owls", session=session)

    held = session.state["checkpoint"]
    assert isinstance(held, Checkpoint)
    assert held.checkpoint_storage is None
    assert held.head_snapshot.state["workflow_state"]["status"] == "awaiting_responses"


async def test_a_session_with_the_whole_checkpoint_round_trips_through_a_session_store(tmp_path):
    agent = build_publisher().as_agent()
    store = FileSessionStore(tmp_path)
    session = agent.create_session(session_id="conversation-1")
    await agent.run("write about owls", session=session)
    await store.set(session)

    loaded = await store.get("conversation-1")
    response = await agent.run(answer("publish", True), session=loaded)

    assert response.text == "published"


async def test_the_session_saved_to_a_file_session_store_holds_a_checkpoint_reference(tmp_path):
    storage = FileCheckpointStorage(tmp_path / "checkpoints")
    store = FileSessionStore(tmp_path / "sessions")
    agent = build_publisher().as_agent(checkpoint_storage=storage)
    session = agent.create_session(session_id="conversation-1")
    await agent.run("write about owls", session=session)
    held = session.state["checkpoint"]  # what the agent put there, before any encoding
    assert type(held) is CheckpointReference
    await store.set(session)

    loaded = await store.get("conversation-1")

    reference = loaded.state["checkpoint"]
    assert reference == held
    persisted = await storage.load(reference.checkpoint_id)
    assert reference.head_snapshot_id == persisted.head_snapshot_id


async def test_a_session_loaded_in_a_fresh_process_continues_the_conversation(tmp_path):
    sessions, checkpoints = tmp_path / "sessions", tmp_path / "checkpoints"
    agent = build_publisher().as_agent(checkpoint_storage=FileCheckpointStorage(checkpoints))
    session = agent.create_session(session_id="conversation-1")
    await agent.run("write about owls", session=session)
    await FileSessionStore(sessions).set(session)

    there = run_fresh("agent-turn", str(sessions), str(checkpoints), "conversation-1", "true")

    assert there["text"] == "published"
    assert there["history"] == [
        "user:write about owls",
        "assistant:",
        "tool:publish=True",
        "assistant:published",
    ]
    back = await FileSessionStore(sessions).get("conversation-1")
    third = await agent.run("another one", session=back)
    assert third.text == "second article"


async def test_one_agent_serves_concurrent_sessions_independently():
    agent = build_chain().as_agent()
    first, second = agent.create_session(), agent.create_session()

    one = await agent.run("owls", session=first)
    other = await agent.run("bats", session=second)

    assert one.text == other.text == "edited one"
    assert first.state["checkpoint"] is not second.state["checkpoint"]


async def test_an_older_copy_of_a_session_continues_from_its_own_turn():
    storage = InMemoryCheckpointStorage()
    agent = build_chain().as_agent(checkpoint_storage=storage)
    session = agent.create_session()
    await agent.run("owls", session=session)
    older = session.state["checkpoint"]
    await agent.run("bats", session=session)

    session.state["checkpoint"] = older  # e.g. a session restored from an earlier backup
    replay = await agent.run("bats", session=session)

    assert replay.text == "edited two"  # the same second turn again, on a new branch
    loaded = await storage.load(older.checkpoint_id)
    assert len(loaded.children(older.head_snapshot_id)) == 2


def test_a_workflow_whose_start_takes_no_chat_messages_cannot_be_an_agent():
    class Numbers(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext) -> None:
            await ctx.yield_output(n)

    workflow = WorkflowBuilder(Numbers(id="numbers")).build()

    with pytest.raises(WorkflowValidationError, match="list\\[ChatMessage\\]"):
        workflow.as_agent()


async def test_a_referenced_checkpoint_needs_an_agent_with_storage():
    stored = build_publisher().as_agent(checkpoint_storage=InMemoryCheckpointStorage())
    session = stored.create_session()
    await stored.run("write about owls", session=session)

    with pytest.raises(AgentError, match="no checkpoint_storage"):
        await WorkflowAgent(build_publisher()).run(answer("publish", True), session=session)


async def test_an_answer_to_an_unknown_request_is_refused_and_changes_nothing():
    agent = build_publisher().as_agent()
    session = agent.create_session()
    await agent.run("write about owls", session=session)
    head = session.state["checkpoint"].head_snapshot_id

    with pytest.raises(InvalidResponseError, match="'publsh'"):
        await agent.run(answer("publsh", True), session=session)

    assert session.state["checkpoint"].head_snapshot_id == head
    assert len(history_texts(session)) == 2


async def test_answers_mixed_with_new_text_are_refused():
    agent = build_publisher().as_agent()
    session = agent.create_session()
    await agent.run("write about owls", session=session)
    mixed = [answer("publish", True), ChatMessage("user", "and make it short")]

    with pytest.raises(AgentError, match="in a run of their own"):
        await agent.run(mixed, session=session)


async def test_a_failed_run_leaves_the_session_at_its_last_good_turn():
    agent = build_publisher().as_agent()
    session = agent.create_session()
    await agent.run("write about owls", session=session)
    await agent.run(answer("publish", True), session=session)
    await agent.run("another one", session=session)
    good = session.state["checkpoint"].head_snapshot_id

    with pytest.raises(WorkflowRunError):  # the script has no fourth reply
        await agent.run("and another", session=session)

    assert session.state["checkpoint"].head_snapshot_id == good
    assert history_texts(session)[-1] == "assistant:second article"


async def test_a_functional_workflow_serves_as_an_agent():
    @workflow(name="summarizer")
    async def summarizer(messages: list[ChatMessage]) -> str:
        return f"{len(messages)} message(s), last: {messages[-1].text}"

    agent = summarizer.as_agent()
    session = agent.create_session()
    await agent.run("hello", session=session)
    response = await agent.run(["one", "two"], session=session)

    assert response.text == "2 message(s), last: two"


class Announce(Executor):
    @handler
    async def announce(self, messages: list[ChatMessage], ctx: WorkflowContext) -> None:
        await ctx.yield_output("first")
        await ctx.send_message("go")


class AfterRelease(Executor):
    def __init__(self, id: str, released: asyncio.Event) -> None:
        super().__init__(id)
        self._released = released

    @handler
    async def finish(self, go: str, ctx: WorkflowContext) -> None:
        await asyncio.wait_for(self._released.wait(), 10)  # the consumer releases it
        await ctx.yield_output("second")


def two_step_agent(released: asyncio.Event) -> WorkflowAgent:
    announce, after = Announce(id="announce"), AfterRelease("after", released)
    return WorkflowBuilder(announce).add_edge(announce, after).build().as_agent()


async def test_streaming_yields_each_output_while_the_workflow_is_still_running():
    released = asyncio.Event()
    agent = two_step_agent(released)
    session = agent.create_session()

    seen = []
    async for update in agent.run("hi", session=session, stream=True):
        seen.append(update.text)
        released.set()  # the second output can only exist after the first was received

    assert seen == ["first", "second"]
    assert history_texts(session) == ["user:hi", "assistant:first", "assistant:second"]


async def test_an_abandoned_stream_cancels_the_run_and_leaves_the_session_unchanged():
    released = asyncio.Event()
    agent = two_step_agent(released)
    session = agent.create_session()
    stream = agent.run("hi", session=session, stream=True)

    first = await anext(stream)
    await stream.aclose()

    assert first.text == "first"
    assert session.state == {}
    released.set()
    done = await agent.run("hi", session=session)
    assert done.text == "firstsecond"


async def test_a_streamed_agent_inside_the_workflow_streams_through_the_workflow_agent():
    node = AgentExecutor(WordStreamingAgent("echo"), output_response=True, stream=True)
    agent = WorkflowBuilder(node).build().as_agent()
    session = agent.create_session()

    updates = [u.text async for u in agent.run("two owls", session=session, stream=True)]
    whole = await agent.run("once more", session=session)

    assert updates == ["echo", " two", " owls"]  # the final AgentResponse is not repeated
    assert whole.text == "echo once more"
    assert history_texts(session) == [
        "user:two owls",
        "assistant:echo two owls",
        "user:once more",
        "assistant:echo once more",
    ]
