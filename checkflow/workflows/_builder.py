"""``WorkflowBuilder``: collects executors and edge groups, validates, builds a ``Workflow``.

The builder is the only mutable part of a definition; ``build()`` checks the graph (types
along every edge, reachability, duplicates, switch defaults), registers the user classes
named in handler annotations with the state codec, and returns an immutable ``Workflow``.
There is no checkpoint storage here, and there must never be.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Self

from checkflow.errors import WorkflowValidationError
from checkflow.workflows._edges import Case, Condition, Default, EdgeGroup, Selection
from checkflow.workflows._executor import Executor, ExecutorSpec
from checkflow.workflows._typing import UNCHECKED, compatible, type_name
from checkflow.workflows._workflow import Workflow

__all__ = ["WorkflowBuilder"]


def _require_executor(value: Any, role: str) -> Executor:
    if not isinstance(value, Executor):
        raise TypeError(f"{role} must be an Executor, got {type(value).__name__}")
    return value


class WorkflowBuilder:
    """Assemble a workflow graph from executors and edges, then ``build()`` it.

    ``max_iterations`` bounds the supersteps of one ``run()`` call.
    """

    def __init__(
        self,
        start_executor: Executor,
        *,
        name: str | None = None,
        max_iterations: int = 100,
    ) -> None:
        self._start = _require_executor(start_executor, "start_executor")
        self._name = name
        self._max_iterations = max_iterations
        self._executors: list[Executor] = [self._start]
        self._groups: list[EdgeGroup] = []
        self._switch_defaults: list[tuple[str, int]] = []

    def _add(self, kind: str, sources: Sequence[Executor], targets: Sequence[Executor],
             **extra: Any) -> Self:
        for obj in (*sources, *targets):
            _require_executor(obj, "every edge endpoint")
            if not any(obj is known for known in self._executors):
                self._executors.append(obj)
        self._groups.append(EdgeGroup(kind, tuple(s.id for s in sources),
                                      tuple(t.id for t in targets), **extra))
        return self

    def add_edge(self, source: Executor, target: Executor,
                 condition: Condition | None = None) -> Self:
        """Connect ``source`` to ``target``; with ``condition`` (sync or async, taking the
        message) only messages it accepts travel."""
        if condition is None:
            return self._add("edge", [source], [target])
        return self._add("conditional", [source], [target], conditions=(condition,))

    def add_fan_out_edges(self, source: Executor, targets: Sequence[Executor]) -> Self:
        """Send every message from ``source`` to each of ``targets``."""
        return self._add("fan_out", [source], list(targets))

    def add_multi_selection_edge_group(
        self, source: Executor, targets: Sequence[Executor], selection_func: Selection
    ) -> Self:
        """Send each message to the targets ``selection_func(message, target_ids)`` names."""
        return self._add("multi_selection", [source], list(targets), selection=selection_func)

    def add_fan_in_edges(self, sources: Sequence[Executor], target: Executor) -> Self:
        """Deliver to ``target`` a ``list`` of messages once every source has sent one."""
        return self._add("fan_in", list(sources), [target])

    def add_switch_case_edge_group(
        self, source: Executor, cases: Sequence[Case | Default]
    ) -> Self:
        """Route each message to the first ``Case`` whose condition holds, else ``Default``."""
        defaults = sum(isinstance(c, Default) for c in cases)
        for case in cases:
            if not isinstance(case, Case | Default):
                raise TypeError(f"switch cases must be Case or Default, got {type(case).__name__}")
        self._switch_defaults.append((source.id, defaults))
        return self._add(
            "switch_case", [source], [c.target for c in cases],
            conditions=tuple(c.condition if isinstance(c, Case) else None for c in cases),
        )

    def add_chain(self, executors: Sequence[Executor]) -> Self:
        """Connect ``executors`` one after another with plain edges."""
        for source, target in itertools.pairwise(executors):
            self.add_edge(source, target)
        return self

    def build(self) -> Workflow:
        """Validate the graph and return the immutable ``Workflow``.

        Raises ``WorkflowValidationError`` naming the offending executor or edge.
        """
        if not isinstance(self._max_iterations, int) or self._max_iterations < 1:
            raise WorkflowValidationError(
                f"max_iterations must be a positive int, got {self._max_iterations!r}")
        specs = self._inspect_executors()
        self._check_switch_defaults()
        self._check_duplicate_edges()
        self._check_types(specs)
        self._check_reachable()
        return Workflow._from_builder(
            name=self._name or self._start.id,
            start_executor_id=self._start.id,
            specs=specs,
            edge_groups=tuple(self._groups),
            max_iterations=self._max_iterations,
        )

    def _inspect_executors(self) -> dict[str, ExecutorSpec]:
        specs: dict[str, ExecutorSpec] = {}
        for obj in self._executors:
            if obj.id in specs:
                raise WorkflowValidationError(
                    f"duplicate executor id {obj.id!r}: {specs[obj.id].executor!r} and "
                    f"{obj!r} are different executors with the same id")
            spec = ExecutorSpec.inspect(obj)
            if not spec.handlers:
                raise WorkflowValidationError(
                    f"executor {obj.id!r} ({type(obj).__qualname__}) has no @handler methods")
            specs[obj.id] = spec
        return specs

    def _check_switch_defaults(self) -> None:
        for source_id, defaults in self._switch_defaults:
            if defaults != 1:
                raise WorkflowValidationError(
                    f"the switch-case group from {source_id!r} needs exactly one Default, "
                    f"it has {defaults}")

    def _check_duplicate_edges(self) -> None:
        seen: dict[tuple[str, str], str] = {}
        for group in self._groups:
            pairs = group.pairs
            if group.kind == "switch_case":  # two cases may share a target
                pairs = list(dict.fromkeys(pairs))
            for pair in pairs:
                if pair in seen:
                    where = ("twice in the same group" if seen[pair] == group.id
                             else f"in {seen[pair]!r} and {group.id!r}")
                    raise WorkflowValidationError(
                        f"duplicate edge {pair[0]!r} -> {pair[1]!r}: it appears {where}")
                seen[pair] = group.id

    def _check_types(self, specs: dict[str, ExecutorSpec]) -> None:
        for group in self._groups:
            for source_id, target_id in group.pairs:
                outs = specs[source_id].output_types()
                if outs is UNCHECKED:
                    continue
                ins = specs[target_id].input_types
                if group.kind == "fan_in":  # the target receives a list of what was sent
                    outs = tuple(list[o] for o in outs)  # type: ignore[valid-type]
                if not any(compatible(o, i) for o in outs for i in ins):
                    sent = " | ".join(type_name(o) for o in outs) or "nothing"
                    accepted = " | ".join(type_name(i) for i in ins)
                    raise WorkflowValidationError(
                        f"type mismatch on edge {source_id!r} -> {target_id!r} "
                        f"({group.kind}): {source_id!r} sends {sent} but {target_id!r} "
                        f"accepts only {accepted}")

    def _check_reachable(self) -> None:
        adjacency: dict[str, set[str]] = {}
        for group in self._groups:
            for source, target in group.pairs:
                adjacency.setdefault(source, set()).add(target)
        reached, frontier = {self._start.id}, [self._start.id]
        while frontier:
            for nxt in adjacency.get(frontier.pop(), ()):
                if nxt not in reached:
                    reached.add(nxt)
                    frontier.append(nxt)
        for obj in self._executors:
            if obj.id not in reached:
                raise WorkflowValidationError(
                    f"executor {obj.id!r} is not reachable from the start executor "
                    f"{self._start.id!r}")
