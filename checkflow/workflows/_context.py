"""``WorkflowContext``: what a handler may do during one delivery, and nothing more.

A context is created by the run for one executor invocation and forwards every action to
that run; it never outlives the run and never touches a checkpoint or storage itself.
Parametrised as ``WorkflowContext[OutT]`` or ``WorkflowContext[OutT, WorkflowOutT]`` it also
declares what the handler sends and yields, which ``build()`` checks along the edges.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from checkflow.workflows._events import WorkflowEvent
    from checkflow.workflows._interceptors import Interceptor

__all__ = ["WorkflowContext", "run_interceptors"]

OutT = TypeVar("OutT")
WorkflowOutT = TypeVar("WorkflowOutT")


class ContextHost(Protocol):
    """The run-scoped side a context forwards to (implemented by the runner)."""

    @property
    def shared_state(self) -> dict[str, Any]: ...

    def send(self, source_id: str, message: Any, target_id: str | None) -> None: ...

    def continue_with(self, executor_id: str, message: Any) -> None: ...

    async def output(self, source_id: str, value: Any) -> None: ...

    async def request(
        self, source_id: str, data: Any, response_type: Any, request_id: str | None
    ) -> str: ...

    async def emit(self, event: WorkflowEvent) -> None: ...

    def executor_state(self, executor_id: str) -> dict[str, Any]: ...

    def stage_shared(self, key: str, value: Any) -> None: ...

    def answering(self, executor_id: str) -> str | None: ...

    @property
    def interceptors(self) -> tuple[Interceptor, ...]: ...


def run_interceptors(ctx: WorkflowContext[Any, Any]) -> tuple[Interceptor, ...]:
    """The interceptors of the run ``ctx`` belongs to (a nested workflow's run inherits them)."""
    return ctx._host.interceptors


class WorkflowContext(Generic[OutT, WorkflowOutT]):
    """The handle a handler gets for one delivery: send, yield, ask, and keep state.

    ``WorkflowContext`` alone means "unchecked"; ``WorkflowContext[OutT]`` declares the
    message types the handler sends, ``WorkflowContext[OutT, WorkflowOutT]`` also the
    workflow outputs it yields (``typing.Never`` for "none").
    """

    __slots__ = ("_executor_id", "_host", "_writes")

    def __class_getitem__(cls, params: Any) -> Any:
        if not isinstance(params, tuple):
            params = (params, Any)
        return super().__class_getitem__(params)  # type: ignore[misc]

    def __init__(self, host: ContextHost, executor_id: str) -> None:
        self._host = host
        self._executor_id = executor_id
        self._writes: dict[str, Any] | None = None

    @property
    def executor_id(self) -> str:
        """The id of the executor this delivery is for."""
        return self._executor_id

    @property
    def request_id(self) -> str | None:
        """In a ``@response_handler``: the id of the request being answered; else ``None``.

        Lets an executor that parked several requests (a nested workflow) tell them apart.
        """
        return self._host.answering(self._executor_id)

    @property
    def executor_state(self) -> MutableMapping[str, Any]:
        """This executor's entry in ``executor_states``: persisted with every snapshot.

        Live state: changes made through it (or through objects taken from it), in this or a
        later superstep of the run, are recorded.
        """
        return self._host.executor_state(self._executor_id)

    async def send_message(self, message: Any, target_id: str | None = None) -> None:
        """Send ``message`` along this executor's edges (only to ``target_id`` if given).

        It is delivered in the next superstep.
        """
        self._host.send(self._executor_id, message, target_id)

    async def continue_with(self, message: Any) -> None:
        """Deliver ``message`` to this executor itself in the next superstep, no edge needed.

        For work done in steps that must each be committed before the next (an agent's tool
        loop): the message waits in ``messages.pending`` like any other, so a resume in
        another process delivers it. This executor must have a handler for it.
        """
        self._host.continue_with(self._executor_id, message)

    async def yield_output(self, value: Any) -> None:
        """Yield a workflow output: recorded in ``messages.output`` and emitted as an event."""
        await self._host.output(self._executor_id, value)

    async def request_info(
        self, data: Any, *, response_type: Any, request_id: str | None = None
    ) -> str:
        """Park a request for outside input; the run pauses once nothing else can run.

        Returns the request id the answer must be given under in ``run(responses=...)``.
        """
        return await self._host.request(self._executor_id, data, response_type, request_id)

    async def add_event(self, event: WorkflowEvent) -> None:
        """Emit a custom event to the run's event stream."""
        await self._host.emit(event)

    def get_state(self, key: str, default: Any = None) -> Any:
        """Workflow-wide shared state as of this superstep (plus this handler's own writes).

        The value is live state: changing it in place, now or in a later superstep of this
        run, is recorded in the snapshots.
        """
        if self._writes is not None and key in self._writes:
            return self._writes[key]
        return self._host.shared_state.get(key, default)

    def set_state(self, key: str, value: Any) -> None:
        """Set workflow-wide shared state; other executors see it from the next superstep.

        The value is recorded as it is at the end of this superstep; to change it later, set
        it again or change what ``get_state`` returns (not an object kept from this call).
        """
        if self._writes is None:
            self._writes = {}
        self._writes[key] = value
        self._host.stage_shared(key, value)
