"""Snapshots re-encode only what a run may have changed, and never disagree with the run.

A part (shared state, one executor's state, fan-in buffers, outputs) that user code reached
during a run is encoded afresh at every later commit of that run: a reference it handed out
may be mutated in any later superstep, e.g. by the receiver of a message that carries it.
Shared state only written (``set_state``) continues from its committed copy. A part no code
reached in this run is handed to the commit as the previous snapshot's bytes.
"""

from __future__ import annotations

from typing import Any

from checkflow.workflows import Executor, WorkflowBuilder, WorkflowContext, handler


class Keeper(Executor):
    """Superstep 1 keeps a list (shared or own state); superstep 2 sends it to the appender."""

    def __init__(self, id: str, where: str) -> None:
        super().__init__(id)
        self._where = where

    @handler
    async def start(self, note: str, ctx: WorkflowContext[list[str] | int]) -> None:
        if self._where == "shared":
            ctx.set_state("log", [note])
        else:
            ctx.executor_state["log"] = [note]
        await ctx.send_message(0, target_id=self.id)

    @handler
    async def hand_out(self, _: int, ctx: WorkflowContext[list[str] | int]) -> None:
        log = ctx.get_state("log") if self._where == "shared" else ctx.executor_state["log"]
        await ctx.send_message(log, target_id="appender")


class Appender(Executor):
    @handler
    async def append(self, log: list[str], ctx: WorkflowContext) -> None:
        log.append("appended")  # the live list: neither get_state nor executor_state here


def aliasing(where: str):
    keeper, appender = Keeper(id="keeper", where=where), Appender(id="appender")
    return (
        WorkflowBuilder(start_executor=keeper)
        .add_edge(keeper, keeper)
        .add_edge(keeper, appender)
        .build()
    )


async def test_a_shared_value_mutated_through_a_message_in_a_later_superstep_is_snapshotted():
    result = await aliasing("shared").run("first")

    state = result.checkpoint.head_snapshot.state
    assert state["workflow_state"]["shared_state"]["log"] == ["first", "appended"]


async def test_an_executor_state_value_mutated_through_a_message_later_is_snapshotted():
    result = await aliasing("executor").run("first")

    state = result.checkpoint.head_snapshot.state
    assert state["executor_states"]["keeper"]["log"] == ["first", "appended"]


class Counter(Executor):
    @handler
    async def count(self, n: int, ctx: WorkflowContext[int]) -> None:
        if n < 3:
            await ctx.send_message(n + 1)


async def test_parts_no_code_reached_in_a_run_reuse_the_previous_snapshots_bytes():
    counter = Counter(id="counter")
    workflow = WorkflowBuilder(start_executor=counter).add_edge(counter, counter).build()
    result = await workflow.run(0)

    inputs = [s.record.parts["messages"]["input"] for s in result.checkpoint.snapshots]
    shared = [s.record.parts["workflow_state"]["shared_state"] for s in result.checkpoint.snapshots]
    assert all(data is inputs[0] for data in inputs[1:])  # written by the entry commit only
    assert all(data is shared[0] for data in shared[1:])


class Writer(Executor):
    """Sets a list it also sends to the appender, then reads it back two supersteps later."""

    @handler
    async def start(self, note: str, ctx: WorkflowContext[list[str] | int, list[str]]) -> None:
        log = [note]
        ctx.set_state("log", log)
        await ctx.send_message(log, target_id="appender")
        await ctx.send_message(1, target_id=self.id)

    @handler
    async def wait(self, n: int, ctx: WorkflowContext[list[str] | int, list[str]]) -> None:
        if n < 2:
            await ctx.send_message(n + 1, target_id=self.id)
        else:
            await ctx.yield_output(list(ctx.get_state("log")))


async def test_a_written_value_changed_later_through_the_writers_reference_is_not_state():
    writer, appender = Writer(id="writer"), Appender(id="appender")
    workflow = (
        WorkflowBuilder(start_executor=writer)
        .add_edge(writer, writer)
        .add_edge(writer, appender)
        .build()
    )
    result = await workflow.run("first", checkpoint=workflow.create_checkpoint())

    assert result.get_outputs() == [["first"]]  # the live run agrees with every snapshot
    for snapshot in result.checkpoint.snapshots[1:]:
        assert snapshot.state["workflow_state"]["shared_state"]["log"] == ["first"]


async def test_a_one_shot_run_keeps_its_state_live_and_encodes_it_once_at_the_end():
    writer, appender = Writer(id="writer"), Appender(id="appender")
    workflow = (
        WorkflowBuilder(start_executor=writer)
        .add_edge(writer, writer)
        .add_edge(writer, appender)
        .build()
    )
    result = await workflow.run("first")

    # no intermediate copies: the writer's reference is the state (documented in run())
    assert result.get_outputs() == [["first", "appended"]]
    (snapshot,) = result.checkpoint.snapshots
    assert snapshot.state["workflow_state"]["shared_state"]["log"] == ["first", "appended"]


class Rewriter(Executor):
    """Overwrites every shared key each superstep, then spoils the list it handed over."""

    def __init__(self, id: str, keys: tuple[str, ...]) -> None:
        super().__init__(id)
        self._keys = keys
        self._handed: list[list[Any]] = []

    @handler
    async def step(self, n: int, ctx: WorkflowContext[int, list[Any]]) -> None:
        for handed in self._handed:  # committed by now: must never change the state
            handed.append("spoiled")
        self._handed = []
        if n >= 3:
            await ctx.yield_output([ctx.get_state(key) for key in ("a", "b")])
            return
        for key in self._keys:
            value = [key, n]
            ctx.set_state(key, value)
            self._handed.append(value)
        await ctx.send_message(n + 1)


async def test_overwriting_every_shared_key_each_superstep_keeps_the_committed_copies():
    seed = Rewriter(id="seed", keys=("a", "b"))
    rewriter = Rewriter(id="rewriter", keys=("a",))  # rewrites only "a": "b" is decoded
    workflow = WorkflowBuilder(start_executor=seed).add_edge(seed, rewriter).add_edge(
        rewriter, rewriter).build()
    result = await workflow.run(0, checkpoint=workflow.create_checkpoint())

    assert result.get_outputs() == [[["a", 2], ["b", 0]]]
    shared = [s.state["workflow_state"]["shared_state"] for s in result.checkpoint.snapshots]
    assert shared[1:] == [
        {"a": ["a", 0], "b": ["b", 0]},
        {"a": ["a", 1], "b": ["b", 0]},
        {"a": ["a", 2], "b": ["b", 0]},
        {"a": ["a", 2], "b": ["b", 0]},
    ]


async def test_a_full_rewrite_of_the_shared_state_decodes_nothing_old(monkeypatch):
    from checkflow.workflows import _runstate

    decoded: list[bytes] = []
    real = _runstate.decode

    def counting(data: bytes, **kwargs: Any) -> Any:
        decoded.append(data)
        return real(data, **kwargs)

    monkeypatch.setattr(_runstate, "decode", counting)
    seed = Rewriter(id="seed", keys=("a", "b"))
    workflow = WorkflowBuilder(start_executor=seed).add_edge(seed, seed).build()
    result = await workflow.run(1, checkpoint=workflow.create_checkpoint())

    assert result.get_outputs() == [[["a", 2], ["b", 2]]]
    assert len(decoded) == 1  # only the final get_state read decodes a committed copy
