"""The run-scoped runner: one per ``run()`` call, hydrated from the checkpoint's head.

The runner holds the guard, checks the graph signature before restoring anything, decodes
the head snapshot once, accepts the input or the responses, executes Pregel supersteps
(deliveries of superstep N come from messages sent in N-1; the executors of one superstep
run concurrently, each one's deliveries in order) and exports its complete state to
``checkpoint.commit_snapshot()`` at the two boundaries. A one-shot run (no checkpoint given)
keeps its state live between supersteps and commits once, when it ends, pauses or stops
unconverged, to the unattached checkpoint it returns: nobody could read the intermediate
snapshots, so they are never encoded. It never builds lineage, never calls storage, never
moves a head, and nothing of it stays reachable from the Workflow.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from checkflow._aio import eager_future
from checkflow._random import random_hex
from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, active_run
from checkflow.errors import (
    GraphSignatureMismatchError,
    InterceptorError,
    WorkflowConvergenceError,
    WorkflowRunError,
)
from checkflow.workflows._context import WorkflowContext
from checkflow.workflows._events import (
    ExecutorCompletedEvent,
    ExecutorFailedEvent,
    ExecutorInvokedEvent,
    OutputEvent,
    RequestInfoEvent,
    SnapshotCommittedEvent,
    SuperstepCompletedEvent,
    SuperstepStartedEvent,
    WorkflowEvent,
    WorkflowFailedEvent,
    WorkflowStartedEvent,
    WorkflowStatusEvent,
)
from checkflow.workflows._executor import ExecutorSpec, HandlerSpec
from checkflow.workflows._interceptors import (
    CommitInfo,
    ExecutorInfo,
    Interceptor,
    RunInfo,
    SuperstepInfo,
    chain,
)
from checkflow.workflows._responses import accept_responses
from checkflow.workflows._results import PendingRequest, RunStatus, WorkflowRunResult
from checkflow.workflows._routing import route
from checkflow.workflows._runstate import INPUT, OUTPUT, SHARED, RunState
from checkflow.workflows._typing import type_name

if TYPE_CHECKING:
    from checkflow.workflows._workflow import Workflow

__all__ = ["Runner"]

Sink = Callable[[WorkflowEvent], Awaitable[None] | None]
"""Takes each event; what it returns, if anything, is awaited before the run goes on."""


class _ExecutorFailed(Exception):
    def __init__(self, executor_id: str, error: BaseException) -> None:
        super().__init__(executor_id)
        self.executor_id = executor_id
        self.error = error


class Runner:
    """Executes one ``run()`` call; implements the host side of ``WorkflowContext``."""

    def __init__(self, workflow: Workflow, checkpoint: Checkpoint | None, message: Any,
                 responses: Mapping[str, Any] | None,
                 interceptors: Sequence[Interceptor] = (),
                 shared_state: Mapping[str, Any] | None = None) -> None:
        self._wf = workflow
        self._plan = workflow.plan
        self._checkpoint = checkpoint if checkpoint is not None else workflow.create_checkpoint()
        self._one_shot = checkpoint is None
        self._deferred: str | None = None  # one-shot: the boundary of the commit not yet made
        self._message = message
        self._responses = responses
        self._interceptors = tuple(interceptors)
        self._writes = dict(shared_state) if shared_state else None  # with the input
        self._sequence = 0
        self._answering: dict[str, str | None] = {}
        self._run = RunState()
        self._events: list[WorkflowEvent] = []
        self._outputs: list[Any] = []
        self._sink: Sink | None = None
        self._staged: dict[str, Any] = {}
        self._outboxes: dict[str, list[tuple[Any, str | None]]] = {}
        self._continuations: list[tuple[str, Any]] = []
        self._dispatch: dict[tuple[str, type], HandlerSpec | None] = {}

    # -- driving ---------------------------------------------------------------------------

    async def run(self, sink: Sink | None = None) -> WorkflowRunResult:
        """Execute the call; events go to ``sink`` as well as onto the result."""
        self._sink = sink
        if self._message is not None and self._responses is not None:
            raise ValueError("give run() a message or responses, not both")
        if self._writes is not None and self._message is None and not self._responses:
            raise ValueError("shared_state is written with an input: give run() a message "
                             "or responses too")
        if not self._interceptors:
            return await self._execute()
        checkpoint = self._checkpoint
        kind = ("responses" if self._responses else
                "message" if self._message is not None else "resume")
        info = RunInfo(self._wf.name, checkpoint.checkpoint_id, checkpoint.head_snapshot_id, kind)
        return await chain(self._interceptors, "run", info, self._execute)()

    async def _execute(self) -> WorkflowRunResult:
        checkpoint = self._checkpoint
        with active_run(checkpoint):
            self._check_signature()
            head = checkpoint.head_snapshot
            self._run = RunState.hydrate(head, self._wf.resolve_type, checkpoint.checkpoint_id)
            await self.emit(WorkflowStartedEvent(checkpoint.checkpoint_id))
            if not await self._accept_input(head is None):
                return await self._finish(self._run.settled_status())
            try:
                await self._supersteps()
            except _ExecutorFailed as failure:
                raise await self._fail(failure) from failure.error
            except WorkflowConvergenceError:
                await self._commit_deferred()
                raise
            return await self._finish(self._run.status)

    def result(self, status: RunStatus) -> WorkflowRunResult:
        """The result as of now (also used for a cancelled or failed run)."""
        return WorkflowRunResult(
            status=status,
            checkpoint=self._checkpoint,
            pending_requests=dict(self._run.requests),
            events=self._events,
            outputs=self._outputs,
        )

    def _check_signature(self) -> None:
        checkpoint, expected = self._checkpoint, self._wf.graph_signature_hash
        if not checkpoint.graph_signature_hash and checkpoint.head_snapshot_id is None:
            checkpoint.graph_signature_hash = expected
            checkpoint.workflow_name = checkpoint.workflow_name or self._wf.name
        if checkpoint.graph_signature_hash != expected:
            raise GraphSignatureMismatchError(
                expected=expected, actual=checkpoint.graph_signature_hash,
                checkpoint_id=checkpoint.checkpoint_id)

    async def _accept_input(self, empty: bool) -> bool:
        """Take the message or responses; False when there is nothing to execute."""
        run = self._run
        if self._responses:  # an empty mapping answers nothing: a bare resume
            accepted = await accept_responses(self._wf, run, self._responses, self.emit)
            run.inputs.append({"kind": "responses", "data": accepted})
            run.record(*INPUT)
        elif self._message is not None:
            start = self._plan.start_executor_id
            if self._handler(self._plan.start, self._message) is None:
                raise TypeError(
                    f"the start executor {start!r} has no handler for a "
                    f"{type_name(type(self._message))} message")
            run.inputs.append({"kind": "message", "data": self._message})
            run.record(*INPUT)
            run.deliveries.append(
                {"kind": "message", "source": None, "target": start, "data": self._message})
        elif empty:
            raise ValueError(
                f"checkpoint {self._checkpoint.checkpoint_id!r} is empty: give run() a message")
        else:
            for request in run.requests.values():
                await self.emit(RequestInfoEvent(request))
            return bool(run.deliveries)
        if self._writes is not None:  # the caller's writes, committed with the input
            run.record(*SHARED)
            run.update_shared(self._writes)
        run.status = run.settled_status()
        await self._commit("input_accepted")
        return True

    async def _supersteps(self) -> None:
        run, budget = self._run, self._wf.max_iterations
        done = 0
        while run.deliveries:
            if done == budget:
                raise WorkflowConvergenceError(budget, result=self.result(RunStatus.RUNNING))
            await self._superstep()
            done += 1

    async def _superstep(self) -> None:
        run = self._run
        number = run.superstep + 1
        by_target: dict[str, list[dict[str, Any]]] = {}
        for delivery in run.deliveries:
            by_target.setdefault(delivery["target"], []).append(delivery)
        run.deliveries = []

        if not self._interceptors:
            return await self._deliver(by_target, number)

        async def superstep() -> None:
            await self._deliver(by_target, number)

        info = SuperstepInfo(self._wf.name, self._checkpoint.checkpoint_id, number,
                             tuple(by_target))
        await chain(self._interceptors, "superstep", info, superstep)()

    async def _deliver(self, by_target: dict[str, list[dict[str, Any]]], number: int) -> None:
        run = self._run
        await self.emit(SuperstepStartedEvent(number))
        if len(by_target) == 1:
            ((target, items),) = by_target.items()
            await self._invoke(target, items, number)
        else:
            await self._invoke_concurrently(by_target, number)
        await self._route_outboxes()
        if self._staged:
            run.record(*SHARED)
            run.update_shared(self._staged)
            self._staged = {}
        run.superstep = number
        run.status = run.settled_status()
        await self.emit(SuperstepCompletedEvent(number))
        await self._commit("superstep_completed")

    async def _invoke_concurrently(self, by_target: dict[str, list[dict[str, Any]]],
                                   number: int) -> None:
        failures: list[_ExecutorFailed] = []

        async def guarded(target: str, items: list[dict[str, Any]]) -> None:
            try:
                await self._invoke(target, items, number)
            except _ExecutorFailed as failure:
                failures.append(failure)
                raise

        try:
            async with asyncio.TaskGroup() as group:
                for target, items in by_target.items():
                    group.create_task(guarded(target, items))
        except BaseExceptionGroup:
            if failures:
                raise failures[0] from None
            raise

    async def _invoke(self, executor_id: str, items: list[dict[str, Any]], number: int) -> None:
        spec = self._plan.spec(executor_id)
        await self.emit(ExecutorInvokedEvent(executor_id, number))

        try:
            if not self._interceptors:
                await self._handle(spec, executor_id, items)
            else:
                async def handle() -> None:
                    await self._handle(spec, executor_id, items)

                info = ExecutorInfo(
                    self._wf.name, self._checkpoint.checkpoint_id, number, executor_id,
                    type(spec.executor).__qualname__,
                    tuple(type_name(type(i["data" if i["kind"] == "message" else "response"]))
                          for i in items))
                await chain(self._interceptors, "executor", info, handle)()
        except InterceptorError:
            raise
        except Exception as exc:
            await self.emit(ExecutorFailedEvent(executor_id, number, exc))
            raise _ExecutorFailed(executor_id, exc) from exc
        await self.emit(ExecutorCompletedEvent(executor_id, number))

    async def _handle(self, spec: ExecutorSpec, executor_id: str,
                      items: list[dict[str, Any]]) -> None:
        ctx: WorkflowContext[Any, Any] = WorkflowContext(self, executor_id)
        for item in items:
            if item["kind"] == "message":
                found = self._handler(spec, item["data"])
                if found is None:
                    raise TypeError(f"executor {executor_id!r} has no handler for a "
                                    f"{type_name(type(item['data']))} message")
                await found.call(item["data"], ctx)
                continue
            responder = spec.find_response_handler(item["request"], item["response"])
            if responder is None:
                raise TypeError(
                    f"executor {executor_id!r} has no @response_handler for request "
                    f"{item['request_id']!r} answered with {type_name(type(item['response']))}")
            self._answering[executor_id] = item["request_id"]
            try:
                await responder.call(item["request"], item["response"], ctx)
            finally:
                self._answering[executor_id] = None

    async def _route_outboxes(self) -> None:
        outboxes, self._outboxes = self._outboxes, {}
        plan, run = self._plan, self._run
        for source_id, sent in outboxes.items():
            for group in plan.routes_from(source_id):
                for message, target_id in sent:
                    await route(group, run, source_id, message, target_id, self._accepts)
        continuations, self._continuations = self._continuations, []
        for executor_id, message in continuations:
            run.deliveries.append(
                {"kind": "message", "source": executor_id, "target": executor_id,
                 "data": message})

    async def _commit(self, boundary: str) -> None:
        if self._one_shot:
            self._deferred = boundary
            return
        await self._commit_now(boundary)

    async def _commit_deferred(self) -> None:
        """One-shot: commit the live state once, as of the last boundary it reached."""
        boundary, self._deferred = self._deferred, None
        if boundary is not None:
            await self._commit_now(boundary)

    async def _commit_now(self, boundary: str) -> None:
        run, checkpoint = self._run, self._checkpoint
        metadata = {"boundary": boundary, "superstep": run.superstep, "status": run.status.value}
        state = run.export(self._wf.type_ref, checkpoint.format)

        def direct() -> Awaitable[CheckpointSnapshot]:
            return checkpoint.commit_snapshot(state=state, metadata=metadata)

        commit: Callable[[], Awaitable[CheckpointSnapshot]] = direct

        if self._interceptors:
            storage = checkpoint.checkpoint_storage
            info = CommitInfo(self._wf.name, checkpoint.checkpoint_id, boundary, run.superstep,
                              checkpoint.head_snapshot_id,
                              "" if storage is None else type(storage).__name__)
            commit = chain(self._interceptors, "commit", info, commit)
        if checkpoint.checkpoint_storage is None:
            snapshot = await commit()
        else:  # a started storage commit finishes even if the run is cancelled meanwhile
            task = eager_future(commit())
            if task.done():  # it never waited (memory): nothing to shield
                snapshot = task.result()
            else:
                try:
                    snapshot = await asyncio.shield(task)
                except asyncio.CancelledError:
                    await asyncio.wait([task])
                    raise
        run.remember(snapshot.record)
        await self.emit(SnapshotCommittedEvent(
            snapshot.snapshot_id, snapshot.parent_snapshot_id, boundary, run.superstep,
            _snapshot=snapshot))

    async def _finish(self, status: RunStatus) -> WorkflowRunResult:
        await self._commit_deferred()
        await self.emit(WorkflowStatusEvent(status))
        return self.result(status)

    async def _fail(self, failure: _ExecutorFailed) -> WorkflowRunError:
        await self.emit(WorkflowFailedEvent(failure.error, failure.executor_id))
        await self.emit(WorkflowStatusEvent(RunStatus.FAILED))
        return WorkflowRunError(
            f"executor {failure.executor_id!r} failed: {type(failure.error).__name__}: "
            f"{failure.error}",
            executor_id=failure.executor_id, result=self.result(RunStatus.FAILED))

    # -- dispatch --------------------------------------------------------------------------

    def _handler(self, spec: ExecutorSpec, message: Any) -> HandlerSpec | None:
        if not spec.cacheable:
            return spec.find_handler(message)
        key = (spec.executor.id, type(message))
        try:
            return self._dispatch[key]
        except KeyError:
            found = self._dispatch[key] = spec.find_handler(message)
            return found

    def _accepts(self, target_id: str, message: Any) -> bool:
        return self._handler(self._plan.spec(target_id), message) is not None

    # -- the context host ------------------------------------------------------------------

    @property
    def interceptors(self) -> tuple[Interceptor, ...]:
        return self._interceptors

    @property
    def shared_state(self) -> dict[str, Any]:
        self._run.reach(*SHARED)  # what a handler reads it may change, now or later
        return self._run.live_shared()

    async def emit(self, event: WorkflowEvent) -> None:
        self._sequence += 1
        event.sequence = self._sequence
        event._time = time.time()
        self._events.append(event)
        if self._sink is not None:
            waiting = self._sink(event)
            if waiting is not None:
                await waiting

    def executor_state(self, executor_id: str) -> dict[str, Any]:
        self._run.reach("executor_states", executor_id)
        state = self._run.executors.get(executor_id)
        if state is None:
            state = self._run.executors[executor_id] = {}
        return state

    def answering(self, executor_id: str) -> str | None:
        return self._answering.get(executor_id)

    def stage_shared(self, key: str, value: Any) -> None:
        self._staged[key] = value

    def send(self, source_id: str, message: Any, target_id: str | None) -> None:
        if target_id is not None and not any(
            target_id in g.targets for g in self._plan.routes_from(source_id)
        ):
            raise ValueError(f"executor {source_id!r} has no edge to {target_id!r}")
        outbox = self._outboxes.get(source_id)
        if outbox is None:
            outbox = self._outboxes[source_id] = []
        outbox.append((message, target_id))

    def continue_with(self, executor_id: str, message: Any) -> None:
        if self._handler(self._plan.spec(executor_id), message) is None:
            raise TypeError(f"executor {executor_id!r} has no handler for a "
                            f"{type_name(type(message))} message to continue with")
        self._continuations.append((executor_id, message))

    async def output(self, source_id: str, value: Any) -> None:
        self._run.outputs.append(value)
        self._run.reach(*OUTPUT)
        self._outputs.append(value)
        await self.emit(OutputEvent(source_id, value))

    async def request(self, source_id: str, data: Any, response_type: Any,
                      request_id: str | None) -> str:
        spec = self._plan.spec(source_id)
        if not spec.accepts_response_type(data, response_type):
            raise TypeError(
                f"executor {source_id!r} has no @response_handler accepting a "
                f"{type_name(type(data))} request answered with {type_name(response_type)}")
        if self._wf.type_ref(response_type) is None:
            raise TypeError(
                f"response_type {type_name(response_type)} cannot be restored from a "
                "checkpoint: name it in a @response_handler annotation of this workflow or "
                "register it with checkflow.state.register_state_type")
        rid = request_id if request_id is not None else random_hex()
        if rid in self._run.requests:
            raise ValueError(f"a request with id {rid!r} is already pending")
        pending = PendingRequest(rid, data, response_type, source_id)
        self._run.requests[rid] = pending
        await self.emit(RequestInfoEvent(pending))
        return rid
