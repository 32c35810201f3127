"""``WorkflowExecutor``: a whole workflow as one node of another, its state in the parent's.

Each delivery runs the child on a throwaway in-memory checkpoint hydrated from
``ctx.executor_state["workflow"]`` (the child's complete four buckets) and stores the child's
final state back there, so the child lives inside the parent's snapshots and nowhere else.
The child's run is wrapped by the parent run's interceptors (so its spans nest in the
parent's). Child outputs are sent on as messages; child requests surface as parent requests under
``<executor id>/<child request id>`` and their answers are routed back. This module must never
keep a child checkpoint, a run or a request on the executor, and never persist anything itself.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.workflows._context import WorkflowContext, run_interceptors
from checkflow.workflows._dynamic import HandlerFunctions, handler_function, union_of
from checkflow.workflows._executor import Executor
from checkflow.workflows._results import RequestCancelled
from checkflow.workflows._typing import UNCHECKED

if TYPE_CHECKING:
    from checkflow.workflows._workflow import Workflow

__all__ = ["WorkflowExecutor"]

_CHILD = "workflow"  # the child's four buckets
_SURFACED = "requests"  # child request ids already surfaced as parent requests


class WorkflowExecutor(Executor):
    """Runs ``workflow`` as a child inside a superstep of the workflow it is part of.

    It accepts what the child's start executor accepts. The child's graph signature is part of
    the parent's, so changing the child's topology invalidates the parent's checkpoints.
    """

    def __init__(self, workflow: Workflow, id: str | None = None) -> None:
        super().__init__(id if id is not None else workflow.name)
        self._workflow = workflow
        self._input_type = union_of(workflow.input_types)
        child_specs = workflow.plan.specs
        answers = [h.input_type for s in child_specs.values() for h in s.response_handlers]
        self._response_type = union_of([*answers, RequestCancelled]) if answers else None
        yielded = [
            h.workflow_output_types
            for s in child_specs.values()
            for h in (*s.handlers, *s.response_handlers)
        ]
        self._sends = (  # the child's outputs, which this executor sends on
            typing.Any
            if any(y is UNCHECKED for y in yielded)
            else union_of([t for y in yielded for t in y], empty=typing.Never)
        )

    @property
    def workflow(self) -> Workflow:
        """The child workflow (a definition, shared by every run)."""
        return self._workflow

    def signature_extra(self) -> dict[str, Any]:
        return {"workflow": self._workflow.name, "signature": self._workflow.graph_signature_hash}

    def _handler_functions(self) -> HandlerFunctions:
        async def run_child(message: Any, ctx: WorkflowContext[Any, Any]) -> None:
            await self._run_child(ctx, message=message)

        ctx_type = WorkflowContext.__class_getitem__((self._sends, typing.Never))
        found: HandlerFunctions = [
            (
                "message",
                "run_child",
                handler_function(run_child, message=self._input_type, ctx=ctx_type),
            )
        ]
        if self._response_type is not None:

            async def answer_child(
                request: Any, answer: Any, ctx: WorkflowContext[Any, Any]
            ) -> None:
                request_id = ctx.request_id
                prefix = f"{self.id}/"
                if request_id is None or not request_id.startswith(prefix):
                    raise RuntimeError(f"{request_id!r} is not a request of executor {self.id!r}")
                await self._run_child(ctx, responses={request_id[len(prefix) :]: answer})

            responder = handler_function(
                answer_child, request=Any, answer=self._response_type, ctx=ctx_type
            )
            found.append(("response", "answer_child", responder))
        return found

    async def _run_child(
        self,
        ctx: WorkflowContext[Any, Any],
        *,
        message: Any = None,
        responses: dict[str, Any] | None = None,
    ) -> None:
        state = ctx.executor_state
        checkpoint = self._child_checkpoint(state.get(_CHILD))
        result = await self._workflow.run(message, checkpoint=checkpoint, responses=responses,
                                          interceptors=run_interceptors(ctx))
        head = checkpoint.head_snapshot
        assert head is not None  # the child accepted input, so it committed
        state[_CHILD] = head.state
        for output in result.get_outputs():
            await ctx.send_message(output)
        surfaced = set(state.get(_SURFACED, ()))
        for child_id, request in result.pending_requests.items():
            if child_id not in surfaced:
                await ctx.request_info(
                    request.data,
                    response_type=request.response_type,
                    request_id=f"{self.id}/{child_id}",
                )
        state[_SURFACED] = sorted(result.pending_requests)

    def _child_checkpoint(self, child_state: dict[str, Any] | None) -> Checkpoint:
        """A throwaway, unattached checkpoint whose only snapshot is the child's stored state."""
        snapshots = []
        if child_state is not None:
            snapshots.append(CheckpointSnapshot(state=child_state, metadata={"boundary": "nested"}))
        return Checkpoint(
            f"{self.id}/child",
            workflow_name=self._workflow.name,
            graph_signature_hash=self._workflow.graph_signature_hash,
            snapshots=snapshots,
            head_snapshot_id=snapshots[0].snapshot_id if snapshots else None,
        )
