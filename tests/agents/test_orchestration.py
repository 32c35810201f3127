"""SequentialBuilder and ConcurrentBuilder: agent orchestrations that checkpoint as usual."""

from __future__ import annotations

import asyncio

import pytest

import checkflow
from checkflow.agents import (
    AgentResponse,
    BaseAgent,
    BranchRetry,
    ChatMessage,
    ConcurrentBuilder,
    ScriptedAgent,
    SequentialBuilder,
    UserInputRequestContent,
)
from checkflow.agents._base import append_history
from checkflow.errors import WorkflowRunError, WorkflowValidationError
from checkflow.sessions import AgentSession
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import (
    Executor,
    ExecutorInvokedEvent,
    RunStatus,
    WorkflowContext,
    handler,
)


def texts(conversation: list[ChatMessage]) -> list[str]:
    return [f"{m.role}:{m.text}" for m in conversation]


class CountingAgent(BaseAgent):
    """Replies ``<name>: <last text>``; counts its calls (a test probe, not run state) and
    fails while ``broken`` is set, or waits for ``gate`` first when one is given."""

    def __init__(self, name: str, *, broken: bool = False,
                 gate: asyncio.Event | None = None) -> None:
        super().__init__(name)
        self.calls = 0
        self.broken = broken
        self.gate = gate

    async def _respond(self, messages: list[ChatMessage], session: AgentSession) -> AgentResponse:
        self.calls += 1
        if self.gate is not None:
            await asyncio.wait_for(self.gate.wait(), timeout=10)
        if self.broken:
            raise ConnectionError(f"{self.name} is down")
        reply = ChatMessage("assistant", f"{self.name}: {messages[-1].text}")
        append_history(session, [*messages, reply])
        return AgentResponse(messages=[reply], author_name=self.name)


class Shout(Executor):
    """An executor participant: upper-cases the last message of the conversation."""

    @handler
    async def shout(self, conversation: list[ChatMessage],
                    ctx: WorkflowContext[list[ChatMessage]]) -> None:
        last = conversation[-1]
        await ctx.send_message([*conversation[:-1], ChatMessage(last.role, last.text.upper())])


async def test_sequential_passes_the_whole_conversation_along():
    writer, editor = CountingAgent("writer"), CountingAgent("editor")
    workflow = SequentialBuilder([writer, editor]).build()

    result = await workflow.run("owls", checkpoint=workflow.create_checkpoint())

    (conversation,) = result.get_outputs()
    assert texts(conversation) == ["user:owls", "assistant:writer: owls",
                                   "assistant:editor: writer: owls"]
    states = result.checkpoint.head_snapshot.state["executor_states"]
    editor_history = states["editor"]["session"].state["messages"]
    # the writer's reply reached the editor as input, not as the editor's own turn
    assert texts(editor_history) == ["user:owls", "user:writer: owls",
                                     "assistant:editor: writer: owls"]
    # input, then one snapshot per step: input, writer, editor, output
    assert len(result.checkpoint.snapshots) == 5


async def test_sequential_mixes_executors_and_resumes_a_paused_agent_from_files(tmp_path):
    ask = UserInputRequestContent("ok", {"question": "publish?"})
    storage = FileCheckpointStorage(tmp_path)
    workflow = SequentialBuilder(
        [ScriptedAgent("writer", ["draft"]), Shout("shout"),
         ScriptedAgent("publisher", [ask, "published"])], name="pipeline").build()
    checkpoint = workflow.create_checkpoint(checkpoint_id="run-1", checkpoint_storage=storage)

    paused = await workflow.run("owls", checkpoint=checkpoint)
    assert paused.status is RunStatus.AWAITING_RESPONSES
    assert list(paused.pending_requests) == ["ok"]

    loaded = await FileCheckpointStorage(tmp_path).load("run-1")
    done = await workflow.run(responses={"ok": True}, checkpoint=loaded)

    (conversation,) = done.get_outputs()
    assert texts(conversation) == ["user:owls", "assistant:DRAFT", "assistant:published"]


async def test_concurrent_aggregates_in_participant_order_whatever_finishes_first():
    gate = asyncio.Event()
    slow = CountingAgent("slow", gate=gate)

    class OpenGate(CountingAgent):
        async def _respond(self, messages, session):
            response = await super()._respond(messages, session)
            gate.set()  # the second participant finishes before the first
            return response

    workflow = ConcurrentBuilder([slow, OpenGate("fast")]).build()
    result = await workflow.run("hello")

    (replies,) = result.get_outputs()
    assert [r.text for r in replies] == ["slow: hello", "fast: hello"]
    supersteps = {e.superstep for e in result.events if isinstance(e, ExecutorInvokedEvent)
                  and e.executor_id in ("slow", "fast")}
    assert supersteps == {2}  # both branches in one superstep


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_concurrent_with_an_aggregator(asynchronous):
    def join(replies: list[AgentResponse]) -> str:
        return " | ".join(r.text for r in replies)

    async def join_async(replies: list[AgentResponse]) -> str:
        return join(replies)

    workflow = ConcurrentBuilder([CountingAgent("a"), CountingAgent("b")],
                                 aggregator=join_async if asynchronous else join).build()
    result = await workflow.run([ChatMessage("user", "x")])
    assert result.get_outputs() == ["a: x | b: x"]


async def test_a_failed_branch_keeps_the_finished_ones_and_a_resume_retries_only_it(tmp_path):
    steady, flaky = CountingAgent("steady"), CountingAgent("flaky", broken=True)
    workflow = ConcurrentBuilder([steady, flaky], name="panel").build()
    storage = FileCheckpointStorage(tmp_path)
    checkpoint = workflow.create_checkpoint(checkpoint_id="panel-1", checkpoint_storage=storage)

    with pytest.raises(WorkflowRunError, match="flaky") as failed:
        await workflow.run("q", checkpoint=checkpoint)
    assert failed.value.executor_id == "flaky"
    assert (steady.calls, flaky.calls) == (1, 2)  # the fan-out try and its retry

    # the committed head holds the finished branch's reply and the failed branch's retry
    loaded = await FileCheckpointStorage(tmp_path).load("panel-1")
    state = loaded.head_snapshot.state
    (buffers,) = (e["buffers"] for e in state["edge_states"].values())
    assert [r.text for r in buffers["steady"]] == ["steady: q"]
    assert state["executor_states"]["flaky"]["retry"][0].text == "q"
    (retry,) = [m["data"] for m in state["messages"]["pending"]["messages"]
                if isinstance(m.get("data"), BranchRetry)]
    assert retry.error == "ConnectionError: flaky is down"

    flaky.broken = False
    result = await workflow.run(checkpoint=loaded)

    assert result.status is RunStatus.IDLE
    (replies,) = result.get_outputs()
    assert [r.text for r in replies] == ["steady: q", "flaky: q"]
    assert (steady.calls, flaky.calls) == (1, 3)  # the finished branch never ran again


async def test_a_branch_failing_once_is_retried_within_the_run():
    class FailsOnce(CountingAgent):
        async def _respond(self, messages, session):
            self.broken = self.calls == 0
            return await super()._respond(messages, session)

    flaky = FailsOnce("flaky")
    result = await ConcurrentBuilder([CountingAgent("a"), flaky]).build().run("q")
    (replies,) = result.get_outputs()
    assert [r.text for r in replies] == ["a: q", "flaky: q"]
    assert flaky.calls == 2


def test_the_builders_are_exported_from_checkflow():
    assert checkflow.SequentialBuilder is SequentialBuilder
    assert checkflow.ConcurrentBuilder is ConcurrentBuilder


@pytest.mark.parametrize("builder", [SequentialBuilder, ConcurrentBuilder])
def test_bad_participants_are_refused(builder):
    with pytest.raises(WorkflowValidationError, match="at least one participant"):
        builder([])
    with pytest.raises(TypeError, match="Agent or an Executor, not int"):
        builder([CountingAgent("a"), 3])
    with pytest.raises(WorkflowValidationError, match="duplicate executor id 'a'"):
        builder([CountingAgent("a"), CountingAgent("a")]).build()


def test_an_executor_participant_that_cannot_take_the_conversation_is_refused():
    class Numbers(Executor):
        @handler
        async def take(self, n: int, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message(n)

    with pytest.raises(WorkflowValidationError, match=r"type mismatch.*'numbers'"):
        SequentialBuilder([Numbers("numbers")]).build()


def test_an_aggregator_must_be_callable():
    with pytest.raises(TypeError, match="aggregator must be callable, not str"):
        ConcurrentBuilder([CountingAgent("a")], aggregator="join")  # type: ignore[arg-type]
