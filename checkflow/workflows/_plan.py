"""``ExecutionPlan``: the named interface between a built ``Workflow`` and the run-scoped runner.

A plan is what ``build()`` compiles for execution: the executor specs by id, the edge groups
leaving each executor, and the annotations a stored type name can be resolved to. The runner,
the response acceptor and nested workflows read a workflow only through its plan, never
through private fields. A plan is immutable and must never hold anything of a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checkflow.workflows._edges import EdgeGroup
from checkflow.workflows._executor import ExecutorSpec

__all__ = ["ExecutionPlan"]


@dataclass(frozen=True, slots=True)
class ExecutionPlan:
    """The compiled graph one workflow's runs execute (shared, read-only)."""

    start_executor_id: str
    specs: Mapping[str, ExecutorSpec]
    routes: Mapping[str, tuple[EdgeGroup, ...]]
    types: Mapping[str, Any]

    def spec(self, executor_id: str) -> ExecutorSpec:
        """The spec of executor ``executor_id`` (a ``KeyError`` names an unknown id)."""
        return self.specs[executor_id]

    def routes_from(self, source_id: str) -> tuple[EdgeGroup, ...]:
        """The edge groups a message sent by ``source_id`` is routed through."""
        return self.routes.get(source_id, ())

    @property
    def start(self) -> ExecutorSpec:
        """The start executor's spec."""
        return self.specs[self.start_executor_id]
