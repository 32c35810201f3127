"""Interceptors wrap a run, its supersteps, executor invocations and commits, in that nesting."""

from __future__ import annotations

import contextvars
from typing import Any

import pytest

from checkflow.errors import InterceptorError, WorkflowRunError
from checkflow.storage import InMemoryCheckpointStorage
from checkflow.workflows import (
    CommitInfo,
    Executor,
    ExecutorInfo,
    Interceptor,
    RunInfo,
    RunStatus,
    SuperstepInfo,
    WorkflowBuilder,
    WorkflowContext,
    encoded_size,
    handler,
    response_handler,
)

current_span: contextvars.ContextVar[str | None] = contextvars.ContextVar("span", default=None)


class Ask(Executor):
    @handler
    async def begin(self, text: str, ctx: WorkflowContext) -> None:
        ctx.executor_state["parent_span"] = current_span.get()  # seen by the handler's code
        await ctx.send_message(text)


class Approve(Executor):
    @handler
    async def ask(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.request_info({"q": text}, response_type=bool)

    @response_handler
    async def answered(self, request: dict, ok: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output("yes" if ok else "no")


def build() -> Any:
    ask, approve = Ask("ask"), Approve("approve")
    return WorkflowBuilder(start_executor=ask, name="approval").add_edge(ask, approve).build()


class Recorder(Interceptor):
    """Records enter/exit of every hook with its ids; sets a span for executor code."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str, dict[str, Any]]] = []

    async def run(self, info: RunInfo, call_next: Any) -> Any:
        self.log.append(("enter", "run", {"checkpoint": info.checkpoint_id,
                                          "head": info.head_snapshot_id, "kind": info.kind,
                                          "workflow": info.workflow_name}))
        result = await call_next()
        self.log.append(("exit", "run", {"status": result.status,
                                         "head": result.checkpoint.head_snapshot_id}))
        return result

    async def superstep(self, info: SuperstepInfo, call_next: Any) -> None:
        self.log.append(("enter", "superstep", {"superstep": info.superstep,
                                                "executors": info.executor_ids}))
        await call_next()
        self.log.append(("exit", "superstep", {}))

    async def executor(self, info: ExecutorInfo, call_next: Any) -> None:
        self.log.append(("enter", "executor", {"id": info.executor_id,
                                               "type": info.executor_type,
                                               "messages": info.message_types,
                                               "superstep": info.superstep}))
        token = current_span.set(f"executor:{info.executor_id}")
        try:
            await call_next()
        finally:
            current_span.reset(token)
        self.log.append(("exit", "executor", {}))

    async def commit(self, info: CommitInfo, call_next: Any) -> Any:
        self.log.append(("enter", "commit", {"boundary": info.boundary,
                                             "parent": info.parent_snapshot_id,
                                             "storage": info.storage}))
        snapshot = await call_next()
        self.log.append(("exit", "commit", {"snapshot": snapshot.snapshot_id,
                                            "parent": snapshot.parent_snapshot_id,
                                            "bytes": encoded_size(snapshot)}))
        return snapshot


def _shape(log: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    return [f"{'+' if kind == 'enter' else '-'}{hook}" for kind, hook, _ in log]


async def test_a_pausing_run_and_its_resumption_nest_run_superstep_executor_commit() -> None:
    workflow, recorder = build(), Recorder()
    checkpoint = workflow.create_checkpoint(checkpoint_id="cp",
                                            checkpoint_storage=InMemoryCheckpointStorage())
    paused = await workflow.run("ship?", checkpoint=checkpoint, interceptors=[recorder])
    assert paused.status is RunStatus.AWAITING_RESPONSES
    assert _shape(recorder.log) == [
        "+run", "+commit", "-commit",
        "+superstep", "+executor", "-executor", "+commit", "-commit", "-superstep",
        "+superstep", "+executor", "-executor", "+commit", "-commit", "-superstep",
        "-run",
    ]
    run_enter = recorder.log[0][2]
    assert run_enter == {"checkpoint": "cp", "head": None, "kind": "message",
                         "workflow": "approval"}
    commits = [d for k, h, d in recorder.log if h == "commit" and k == "exit"]
    assert [c["parent"] for c in commits[1:]] == [c["snapshot"] for c in commits[:-1]]
    assert all(c["bytes"] > 0 for c in commits)
    entries = [d for k, h, d in recorder.log if h == "commit" and k == "enter"]
    assert [e["boundary"] for e in entries] == ["input_accepted", "superstep_completed",
                                                "superstep_completed"]
    assert entries[0]["storage"] == "InMemoryCheckpointStorage"
    executors = [d for k, h, d in recorder.log if h == "executor" and k == "enter"]
    assert [(e["id"], e["type"], e["messages"], e["superstep"]) for e in executors] == [
        ("ask", "Ask", ("str",), 1), ("approve", "Approve", ("str",), 2)]
    assert recorder.log[-1][2]["head"] == commits[-1]["snapshot"]
    head = checkpoint.head_snapshot
    assert head is not None and head.state["executor_states"]["ask"]["parent_span"] == (
        "executor:ask")  # the handler ran inside the executor hook

    recorder.log.clear()
    (request_id,) = paused.pending_requests
    done = await workflow.run(responses={request_id: True}, checkpoint=checkpoint,
                              interceptors=[recorder])
    assert done.get_outputs() == ["yes"]
    assert _shape(recorder.log) == ["+run", "+commit", "-commit", "+superstep", "+executor",
                                    "-executor", "+commit", "-commit", "-superstep", "-run"]
    assert recorder.log[0][2]["kind"] == "responses"
    assert recorder.log[0][2]["head"] == commits[-1]["snapshot"]


class FailOnSecondCommit(Interceptor):
    def __init__(self) -> None:
        self.commits = 0

    async def commit(self, info: CommitInfo, call_next: Any) -> Any:
        self.commits += 1
        if self.commits == 2:
            raise RuntimeError("telemetry backend down")
        return await call_next()


async def test_an_interceptor_that_raises_fails_the_run_without_corrupting_the_checkpoint() -> None:
    workflow = build()
    storage = InMemoryCheckpointStorage()
    checkpoint = workflow.create_checkpoint(checkpoint_id="cp", checkpoint_storage=storage)
    with pytest.raises(InterceptorError, match=r"FailOnSecondCommit.*'commit'.*backend down"):
        await workflow.run("ship?", checkpoint=checkpoint, interceptors=[FailOnSecondCommit()])
    reloaded = await storage.load("cp")
    assert len(reloaded.snapshots) == 1  # the entry snapshot; the refused one never landed
    assert reloaded.head_snapshot_id == checkpoint.head_snapshot_id
    resumed = await workflow.run(checkpoint=reloaded)  # continues cleanly without it
    assert resumed.status is RunStatus.AWAITING_RESPONSES


class Broken(Interceptor):
    def __init__(self, hook: str, before: bool) -> None:
        self.hook, self.before = hook, before

    async def executor(self, info: ExecutorInfo, call_next: Any) -> None:
        if self.hook == "executor" and self.before:
            raise KeyError("no span")
        await call_next()
        if self.hook == "executor":
            raise KeyError("no span after")

    async def superstep(self, info: SuperstepInfo, call_next: Any) -> None:
        if self.hook == "superstep":
            return  # forgets call_next
        await call_next()


@pytest.mark.parametrize(("hook", "before"), [("executor", True), ("executor", False),
                                              ("superstep", True)])
async def test_a_broken_interceptor_is_named_not_blamed_on_the_executor(
    hook: str, before: bool
) -> None:
    with pytest.raises(InterceptorError) as caught:
        await build().run("x", interceptors=[Broken(hook, before)])
    assert caught.value.interceptor == "Broken" and caught.value.hook == hook


class Boom(Executor):
    @handler
    async def boom(self, text: str, ctx: WorkflowContext) -> None:
        raise ValueError("handler failed")


async def test_an_executor_error_passes_through_the_interceptor_unchanged() -> None:
    workflow = WorkflowBuilder(start_executor=Boom("boom")).build()
    recorder = Recorder()
    with pytest.raises(WorkflowRunError, match="handler failed"):
        await workflow.run("x", interceptors=[recorder])
    assert ("enter", "executor") in [(k, h) for k, h, _ in recorder.log]
