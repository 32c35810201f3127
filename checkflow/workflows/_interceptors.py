"""Interceptors: the one hook for cross-cutting concerns (tracing, metrics, audit) in a run.

An ``Interceptor`` may wrap four points of a run, each a ``call_next``-style method in the
manner of Temporal's interceptor chain: the whole run, each superstep, each executor
invocation (the handler code runs inside ``call_next``, so a span opened around it parents
the executor's own outbound calls) and each snapshot commit. The first interceptor given is
the outermost. Each method receives an immutable ``*Info`` record with the ids of what it wraps.

An interceptor that raises (before or after ``call_next``) fails the run with
``InterceptorError`` naming it; an error raised by ``call_next`` itself passes through
unchanged. A commit is atomic, so an interceptor never leaves a half-written snapshot.
With no interceptors nothing here is called. This module must never import OpenTelemetry or
any other instrumentation library, and must never touch a checkpoint itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from checkflow.errors import InterceptorError

if TYPE_CHECKING:
    from checkflow.checkpoints import CheckpointSnapshot
    from checkflow.workflows._results import WorkflowRunResult

__all__ = [
    "CommitInfo",
    "ExecutorInfo",
    "Interceptor",
    "RunInfo",
    "SuperstepInfo",
    "encoded_size",
]

T = TypeVar("T")
CallNext = Callable[[], Awaitable[T]]


@dataclass(frozen=True, slots=True)
class _Info:
    workflow_name: str
    checkpoint_id: str


@dataclass(frozen=True, slots=True)
class RunInfo(_Info):
    """One ``run()`` call: which workflow, which checkpoint, and the head it starts from."""

    head_snapshot_id: str | None
    kind: str  # "message", "responses" or "resume"


@dataclass(frozen=True, slots=True)
class SuperstepInfo(_Info):
    """One superstep (``superstep`` is the lifetime counter along the lineage)."""

    superstep: int
    executor_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ExecutorInfo(_Info):
    """One executor's invocation in a superstep, with the types of what it is handed."""

    superstep: int
    executor_id: str
    executor_type: str
    message_types: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CommitInfo(_Info):
    """A snapshot about to be committed: its boundary and the parent it will attach to."""

    boundary: str
    superstep: int
    parent_snapshot_id: str | None
    storage: str  # the storage class name, "" when unattached


class Interceptor:
    """Subclass and override any of the four methods; each must await ``call_next()`` once.

    The defaults just call through, so an interceptor overrides only what it observes.
    """

    async def run(self, info: RunInfo, call_next: CallNext[WorkflowRunResult]
                  ) -> WorkflowRunResult:
        """Wraps the whole run; ``call_next()`` returns (or raises) the run's outcome."""
        return await call_next()

    async def superstep(self, info: SuperstepInfo, call_next: CallNext[None]) -> None:
        """Wraps one superstep, from its first delivery to its committed snapshot."""
        await call_next()

    async def executor(self, info: ExecutorInfo, call_next: CallNext[None]) -> None:
        """Wraps one executor invocation; the handler code runs inside ``call_next()``."""
        await call_next()

    async def commit(self, info: CommitInfo, call_next: CallNext[CheckpointSnapshot]
                     ) -> CheckpointSnapshot:
        """Wraps one snapshot commit; ``call_next()`` returns the committed snapshot."""
        return await call_next()


def encoded_size(snapshot: CheckpointSnapshot) -> int:
    """The bytes of a committed snapshot's encoded state (what a storage was handed)."""
    return sum(len(data) for parts in snapshot.record.parts.values() for data in parts.values())


def chain(
    interceptors: Sequence[Interceptor],
    hook: str,
    info: Any,
    innermost: CallNext[T],
) -> CallNext[T]:
    """``innermost`` wrapped by each interceptor's ``hook``, the first one outermost."""
    call = innermost
    for interceptor in reversed(interceptors):
        call = _link(interceptor, hook, info, call)
    return call


def _link(interceptor: Interceptor, hook: str, info: Any, call_next: CallNext[T]) -> CallNext[T]:
    method: Callable[[Any, CallNext[T]], Awaitable[T]] = getattr(interceptor, hook)

    async def call() -> T:
        passed: list[BaseException] = []
        called: list[bool] = []

        async def inner() -> T:
            called.append(True)
            try:
                return await call_next()
            except BaseException as exc:
                passed.append(exc)
                raise

        try:
            result = await method(info, inner)
        except Exception as exc:
            if passed and passed[-1] is exc:
                raise  # the wrapped work failed: not the interceptor's doing
            raise InterceptorError(type(interceptor).__name__, hook, exc) from exc
        if not called:
            raise InterceptorError(type(interceptor).__name__, hook,
                                   RuntimeError("it returned without awaiting call_next()"))
        return result

    return call
