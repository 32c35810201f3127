"""``Workflow``: the immutable, reusable definition, and the entry point of every run.

A Workflow holds topology, executor definitions, the graph signature and configuration,
nothing else. Each ``run()`` builds a run-scoped runner hydrated from the checkpoint's head;
the Workflow must never store anything about a run, so one instance serves any number of
concurrent runs on different checkpoints.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin, overload

from checkflow.checkpoints import Checkpoint, CheckpointStorage, ExistenceCheck
from checkflow.errors import CheckpointExistsError, WorkflowValidationError
from checkflow.state import is_registered, register_state_type, registered_type, state_type_id
from checkflow.workflows._edges import EdgeGroup
from checkflow.workflows._executor import Executor, ExecutorSpec
from checkflow.workflows._interceptors import Interceptor
from checkflow.workflows._mermaid import to_mermaid
from checkflow.workflows._plan import ExecutionPlan
from checkflow.workflows._results import WorkflowRunResult
from checkflow.workflows._runner import Runner
from checkflow.workflows._signature import graph_description, signature_hash
from checkflow.workflows._stream import WorkflowRunStream
from checkflow.workflows._typing import (
    builtin_type,
    most_specific_first,
    named_classes,
    type_name,
)

if TYPE_CHECKING:
    from checkflow.agents import WorkflowAgent

__all__ = ["Workflow", "set_agent_factory"]

AgentFactory = Callable[..., "WorkflowAgent"]
_agent_factory: AgentFactory | None = None


def set_agent_factory(factory: AgentFactory) -> None:
    """Install what ``Workflow.as_agent()`` builds (``checkflow.agents`` installs
    ``WorkflowAgent`` when imported, which ``import checkflow`` always does).

    The engine sits below the agents, so it must not import them: the agents layer hands its
    class down instead (dependency inversion, no import cycle).
    """
    global _agent_factory
    _agent_factory = factory

_STATE_TYPE_PREFIX = "state:"
"""Marks a stored type name that is a state codec type id rather than an annotation name."""


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Workflow:
    """A built workflow graph: immutable, stateless, safe to run concurrently.

    Create it with ``WorkflowBuilder(...).build()``. Execution state lives only in the
    ``Checkpoint`` passed to (or created by) ``run()``.
    """

    name: str
    start_executor_id: str
    max_iterations: int
    graph_signature_hash: str
    executors: Mapping[str, Executor]
    edge_groups: tuple[EdgeGroup, ...]
    plan: ExecutionPlan = dataclasses.field(repr=False)
    """What runs execute (specs, routes, restorable types): the runner's only view of this."""

    @classmethod
    def _from_builder(
        cls,
        *,
        name: str,
        start_executor_id: str,
        specs: dict[str, ExecutorSpec],
        edge_groups: tuple[EdgeGroup, ...],
        max_iterations: int,
    ) -> Workflow:
        annotations = [
            t
            for spec in specs.values()
            for h in (*spec.handlers, *spec.response_handlers)
            for t in (h.input_type, h.request_type, *_declared(h.output_types),
                      *_declared(h.workflow_output_types))
            if t is not None
        ]
        _register_named_classes(annotations)
        routes: dict[str, list[EdgeGroup]] = {}
        for group in edge_groups:
            for source in group.sources:
                routes.setdefault(source, []).append(group)
        return cls(
            name=name,
            start_executor_id=start_executor_id,
            max_iterations=max_iterations,
            graph_signature_hash=signature_hash(
                graph_description(start_executor_id, specs, edge_groups)),
            executors=types.MappingProxyType({i: s.executor for i, s in specs.items()}),
            edge_groups=edge_groups,
            plan=ExecutionPlan(
                start_executor_id=start_executor_id,
                specs=types.MappingProxyType(specs),
                routes=types.MappingProxyType({k: tuple(v) for k, v in routes.items()}),
                types=types.MappingProxyType(
                    {type_name(t): t for t in _with_args(annotations)}),
            ),
        )

    @property
    def input_types(self) -> tuple[Any, ...]:
        """The start executor's message-handler input annotations, in dispatch order.

        Dispatch picks the most specific handler for a message, declaration order breaking
        ties; so a handler for a subclass comes before one for its base class, and otherwise
        declaration order is kept. A caller converting raw input (the hosts) tries them in
        this order to reach the handler a run would pick.
        """
        declared = [h.input_type for h in self.plan.start.handlers]
        return most_specific_first(declared)

    def accepts_input(self, message: Any) -> bool:
        """Whether the start executor has a handler for ``message``.

        Lets a wrapper (``WorkflowAgent``) refuse a workflow it could never start, at
        construction instead of on the first run.
        """
        return self.plan.start.find_handler(message) is not None

    def to_mermaid(self) -> str:
        """This graph as a Mermaid flowchart: executors, edges labelled with their kinds
        (fan-out and fan-in included) and nested workflows as subgraphs."""
        return to_mermaid(self)

    def create_checkpoint(
        self,
        *,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> Checkpoint:
        """A new, empty, caller-owned checkpoint stamped with this workflow's name and hash.

        With ``checkpoint_storage`` every snapshot a run commits is persisted there. An id
        the storage already holds raises ``CheckpointExistsError`` (continue it with
        ``storage.load(id)`` instead): here when the storage can tell at once (memory, files),
        else at the run's first commit (Cosmos DB). Without an id a fresh one is generated.
        """
        storage: object = checkpoint_storage  # (a storage may declare more than the protocol)
        if (checkpoint_id is not None and isinstance(storage, ExistenceCheck)
                and storage.checkpoint_exists(checkpoint_id)):
            raise CheckpointExistsError(checkpoint_id, actual_head_snapshot_id=None)
        return Checkpoint(
            checkpoint_id,
            workflow_name=self.name,
            graph_signature_hash=self.graph_signature_hash,
            checkpoint_storage=checkpoint_storage,
        )

    def as_agent(
        self, *, name: str | None = None, checkpoint_storage: CheckpointStorage | None = None
    ) -> WorkflowAgent:
        """This workflow as an ``Agent`` whose sessions hold its checkpoints (``WorkflowAgent``).

        With ``checkpoint_storage`` a session keeps a ``CheckpointReference``; without, the
        whole checkpoint. The class is the one ``checkflow.agents`` installed with
        ``set_agent_factory`` (the engine never imports the agents layer).
        """
        if _agent_factory is None:
            raise RuntimeError("as_agent() needs checkflow.agents: import checkflow first")
        return _agent_factory(self, name=name, checkpoint_storage=checkpoint_storage)

    @overload
    def run(
        self,
        message: Any | None = None,
        *,
        checkpoint: Checkpoint | None = None,
        responses: Mapping[str, Any] | None = None,
        stream: Literal[False] = False,
        interceptors: Sequence[Interceptor] = (),
        shared_state: Mapping[str, Any] | None = None,
    ) -> Coroutine[Any, Any, WorkflowRunResult]: ...

    @overload
    def run(
        self,
        message: Any | None = None,
        *,
        checkpoint: Checkpoint | None = None,
        responses: Mapping[str, Any] | None = None,
        stream: Literal[True],
        interceptors: Sequence[Interceptor] = (),
        shared_state: Mapping[str, Any] | None = None,
    ) -> WorkflowRunStream: ...

    def run(
        self,
        message: Any | None = None,
        *,
        checkpoint: Checkpoint | None = None,
        responses: Mapping[str, Any] | None = None,
        stream: bool = False,
        interceptors: Sequence[Interceptor] = (),
        shared_state: Mapping[str, Any] | None = None,
    ) -> Coroutine[Any, Any, WorkflowRunResult] | WorkflowRunStream:
        """Run from ``checkpoint``'s head (a fresh one-shot checkpoint when omitted).

        Give a ``message`` for the start executor, or ``responses`` (request id -> answer)
        for pending requests, or neither to resume. Awaiting the call returns a
        ``WorkflowRunResult``; with ``stream=True`` it returns a ``WorkflowRunStream`` of
        events instead. Given a ``checkpoint``, each call snapshots its entry and every
        completed superstep. Without one (a one-shot run) the state stays live between
        supersteps and is encoded once, when the run ends, pauses for responses or stops
        unconverged: ``result.checkpoint`` then holds that one snapshot (resumable with
        ``run(responses=..., checkpoint=result.checkpoint)``); a one-shot run that fails or
        is cancelled leaves it without snapshots, and a value a handler handed to
        ``set_state`` and changed later is seen changed by later supersteps of that run.
        ``interceptors`` wrap the run, its supersteps, executor invocations and commits
        (``checkflow.workflows.Interceptor``); none costs nothing. ``shared_state`` writes
        keys of the shared state with the input (a message or responses, never a bare
        resume), as ``set_state`` would: the input's ``input_accepted`` snapshot holds them,
        so they branch and roll back with it (a client's writes, say, taken by a host).
        """
        runner = Runner(self, checkpoint, message, responses, interceptors, shared_state)
        if stream:
            return WorkflowRunStream(runner)
        return runner.run()

    def type_ref(self, tp: Any) -> str | None:
        """The name a pending request's ``response_type`` is stored under, or ``None`` when a
        rebuilt workflow could not restore it.

        Restorable are builtins, annotations named by this graph's handlers (by
        ``module.QualName``) and any class registered with the state codec (by its type id).
        """
        name = type_name(tp)
        if self.resolve_type(name) == tp:
            return name
        type_id = state_type_id(tp) if isinstance(tp, type) else None
        return None if type_id is None else _STATE_TYPE_PREFIX + type_id

    def resolve_type(self, name: str) -> Any:
        """The annotation a stored type name stands for, or ``None`` if this graph has none."""
        known = self.plan.types
        if name in known:
            return known[name]
        if name.startswith(_STATE_TYPE_PREFIX):
            return registered_type(name.removeprefix(_STATE_TYPE_PREFIX))
        if name == "typing.Any":
            return Any
        if name == "None":
            return type(None)
        return builtin_type(name)


def _declared(types_: Any) -> tuple[Any, ...]:
    return types_ if isinstance(types_, tuple) else ()


def _register_named_classes(annotations: list[Any]) -> None:
    """Let the codec carry the user classes handlers name, under ``module.QualName``."""
    for cls in named_classes(annotations):
        if is_registered(cls):
            continue
        type_id = f"{cls.__module__}.{cls.__qualname__}"
        try:
            register_state_type(cls, type_id=type_id)
        except (ValueError, TypeError) as exc:
            raise WorkflowValidationError(
                f"cannot register {type_id} (named in a handler annotation) with the state "
                f"codec: {exc}") from exc


def _with_args(annotations: list[Any]) -> list[Any]:
    """Every annotation and, recursively, the annotations inside it (not Literal values)."""
    found: list[Any] = []
    pending = list(annotations)
    while pending:
        tp = pending.pop()
        found.append(tp)
        if get_origin(tp) is not Literal:
            pending.extend(a for a in get_args(tp) if a is not Ellipsis)
    return found
