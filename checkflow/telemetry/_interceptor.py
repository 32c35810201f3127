"""``OpenTelemetryInterceptor``: a run's spans and metrics, from the engine's interceptor hooks.

Spans: ``workflow.run`` > ``workflow.superstep`` > ``executor.process`` (the handler runs
inside it, so its own instrumented calls are children) and ``checkpoint.commit``. An
``AgentExecutor``'s span carries the GenAI agent-span attributes (``gen_ai.operation.name =
invoke_agent``, ``gen_ai.agent.id``). A failure is recorded on the span it happened in, with
status ERROR and ``error.type``; a cancelled run is not an error. A run of a checkpoint seen
before by this interceptor links to that checkpoint's earlier runs, and every run carries
``checkpoint.id`` and ``snapshot.start_head_id`` (the previous run's ``snapshot.head_id``),
which tie runs together across processes. This module must never touch a checkpoint or read
state: it sees only the ``*Info`` records and the committed snapshot's byte size. When the
run's span is not recording (no SDK configured, or the trace sampled out) the hooks below it
open no spans at all, and only the metrics are recorded.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from opentelemetry import metrics, trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode

from checkflow._version import __version__ as _VERSION
from checkflow.agents import AgentExecutor
from checkflow.hosting import current_conversation_id
from checkflow.telemetry import _names as n
from checkflow.telemetry._metrics import Instruments
from checkflow.telemetry._request import annotate_request
from checkflow.workflows import (
    CommitInfo,
    ExecutorInfo,
    Interceptor,
    RunInfo,
    SuperstepInfo,
    encoded_size,
)

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from checkflow.checkpoints import CheckpointSnapshot
    from checkflow.workflows import WorkflowRunResult

__all__ = ["OpenTelemetryInterceptor"]

T = TypeVar("T")
CallNext = Callable[[], Awaitable[T]]

_AGENT_EXECUTOR = AgentExecutor.__qualname__
_REMEMBERED_CHECKPOINTS = 1024  # checkpoints whose recent runs are kept for span links
_REMEMBERED_RUNS = 16  # links per checkpoint (the most recent runs)
_UNATTACHED = "unattached"


@dataclass(slots=True)
class _RunScope:
    """What a run's hooks learn as it goes (shared by the tasks the run spawns)."""

    storage: str = _UNATTACHED
    head: str | None = None
    supersteps: int = 0
    recording: bool = True  # False: the run's span is not recorded (no SDK, or sampled out)


_SCOPE: ContextVar[_RunScope | None] = ContextVar("checkflow_telemetry_run", default=None)


def _storage_kind(name: str) -> str:
    return name or _UNATTACHED


def _fail(span: Span, exc: BaseException) -> None:
    if type(exc).__name__.startswith("_") and exc.__cause__ is not None:
        exc = exc.__cause__  # the engine's private wrapper of an executor's own error
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
    span.set_attribute(n.ERROR_TYPE, type(exc).__qualname__)


class OpenTelemetryInterceptor(Interceptor):
    """Traces and measures every run it wraps (the global providers when ``None``).

    Pass it in ``interceptors=[...]`` of ``Workflow.run`` or ``WorkflowHost``. Conventions:
    GenAI agent spans (``gen_ai.operation.name``, ``gen_ai.agent.id``,
    ``gen_ai.conversation.id``) and the general ``error.type``; everything else is named in
    ``docs/telemetry.md``. Metric attributes are bounded: workflow name, storage kind and
    (runs) final status; never a conversation or checkpoint id.
    """

    def __init__(self, tracer_provider: TracerProvider | None = None,
                 meter_provider: MeterProvider | None = None) -> None:
        self._tracer = trace.get_tracer(n.INSTRUMENTATION, _VERSION,
                                        tracer_provider=tracer_provider)
        self._metrics = Instruments(metrics.get_meter(n.INSTRUMENTATION, _VERSION,
                                                      meter_provider=meter_provider))
        self._earlier: OrderedDict[str, list[SpanContext]] = OrderedDict()

    @contextmanager
    def _span(self, name: str, attributes: dict[str, object], links: list[Link] | None = None
              ) -> Iterator[Span]:
        with self._tracer.start_as_current_span(
                name, kind=SpanKind.INTERNAL, attributes=attributes,  # type: ignore[arg-type, unused-ignore]
                links=links, record_exception=False, set_status_on_exception=False) as span:
            try:
                yield span
            except asyncio.CancelledError:
                raise  # stopped, not failed
            except BaseException as exc:
                _fail(span, exc)
                raise

    def _links(self, checkpoint_id: str) -> list[Link]:
        earlier = self._earlier.get(checkpoint_id, [])
        return [Link(context, {n.CHECKPOINT_ID: checkpoint_id}) for context in earlier]

    def _remember(self, checkpoint_id: str, context: SpanContext) -> None:
        runs = self._earlier.pop(checkpoint_id, [])
        runs = [*runs, context][-_REMEMBERED_RUNS:]
        self._earlier[checkpoint_id] = runs
        while len(self._earlier) > _REMEMBERED_CHECKPOINTS:
            self._earlier.popitem(last=False)

    async def run(self, info: RunInfo, call_next: CallNext[WorkflowRunResult]
                  ) -> WorkflowRunResult:
        links = self._links(info.checkpoint_id)
        attributes: dict[str, object] = {
            n.WORKFLOW_NAME: info.workflow_name, n.CHECKPOINT_ID: info.checkpoint_id,
            n.HEAD_ID: info.head_snapshot_id or "", n.START_HEAD_ID: info.head_snapshot_id or "",
            n.RUN_KIND: info.kind, n.EARLIER_RUNS: len(links)}
        conversation = current_conversation_id()
        if conversation is not None:
            attributes[n.CONVERSATION_ID] = conversation
            annotate_request(n.CONVERSATION_ID, conversation)
        scope = _RunScope(head=info.head_snapshot_id)
        token = _SCOPE.set(scope)
        status = "failed"
        try:
            with self._span(n.RUN_SPAN, attributes, links) as span:
                scope.recording = span.is_recording()
                if scope.recording:
                    self._remember(info.checkpoint_id, span.get_span_context())
                try:
                    result = await call_next()
                    status = result.status.value
                    span.set_attribute(n.RUN_PENDING, len(result.pending_requests))
                except asyncio.CancelledError:
                    status = "cancelled"
                    raise
                finally:
                    span.set_attribute(n.RUN_STATUS, status)
                    span.set_attribute(n.HEAD_ID, scope.head or "")
                    span.set_attribute(n.RUN_SUPERSTEPS, scope.supersteps)
                    span.set_attribute(n.STORAGE, scope.storage)
                if status == "failed":
                    span.set_status(Status(StatusCode.ERROR, "the run failed"))
                return result
        finally:
            _SCOPE.reset(token)
            self._metrics.run_ended(info.workflow_name, scope.storage, status)

    async def superstep(self, info: SuperstepInfo, call_next: CallNext[None]) -> None:
        scope = _SCOPE.get()
        if scope is not None:
            scope.supersteps += 1
        started = time.perf_counter()
        try:
            if scope is not None and not scope.recording:
                await call_next()  # nothing records the spans below: skip building them
                return
            with self._span(n.SUPERSTEP_SPAN, {
                    n.WORKFLOW_NAME: info.workflow_name, n.CHECKPOINT_ID: info.checkpoint_id,
                    n.SUPERSTEP: info.superstep,
                    n.SUPERSTEP_EXECUTORS: list(info.executor_ids)}):
                await call_next()
        finally:
            storage = scope.storage if scope is not None else _UNATTACHED
            self._metrics.superstep_ended(info.workflow_name, storage,
                                          time.perf_counter() - started)

    async def executor(self, info: ExecutorInfo, call_next: CallNext[None]) -> None:
        scope = _SCOPE.get()
        if scope is not None and not scope.recording:
            await call_next()
            return
        attributes: dict[str, object] = {
            n.WORKFLOW_NAME: info.workflow_name, n.CHECKPOINT_ID: info.checkpoint_id,
            n.SUPERSTEP: info.superstep, n.EXECUTOR_ID: info.executor_id,
            n.EXECUTOR_TYPE: info.executor_type,
            n.MESSAGE_TYPE: ", ".join(dict.fromkeys(info.message_types))}
        if info.executor_type == _AGENT_EXECUTOR:
            attributes[n.GEN_AI_OPERATION] = "invoke_agent"
            attributes[n.GEN_AI_AGENT_ID] = info.executor_id
        with self._span(n.EXECUTOR_SPAN, attributes):
            await call_next()

    async def commit(self, info: CommitInfo, call_next: CallNext[CheckpointSnapshot]
                     ) -> CheckpointSnapshot:
        storage = _storage_kind(info.storage)
        scope = _SCOPE.get()
        if scope is not None:
            scope.storage = storage
        started = time.perf_counter()
        if scope is not None and not scope.recording:
            snapshot = await call_next()
            scope.head = snapshot.snapshot_id
            self._metrics.committed(info.workflow_name, storage, time.perf_counter() - started,
                                    encoded_size(snapshot))
            return snapshot
        with self._span(n.COMMIT_SPAN, {
                n.WORKFLOW_NAME: info.workflow_name, n.CHECKPOINT_ID: info.checkpoint_id,
                n.SNAPSHOT_PARENT_ID: info.parent_snapshot_id or "",
                n.SNAPSHOT_BOUNDARY: info.boundary, n.SUPERSTEP: info.superstep,
                n.STORAGE: storage}) as span:
            snapshot = await call_next()
            size = encoded_size(snapshot)
            span.set_attribute(n.SNAPSHOT_ID, snapshot.snapshot_id)
            span.set_attribute(n.SNAPSHOT_BYTES, size)
        if scope is not None:
            scope.head = snapshot.snapshot_id
        self._metrics.committed(info.workflow_name, storage, time.perf_counter() - started, size)
        return snapshot
