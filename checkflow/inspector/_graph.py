"""A workflow's graph as plain data for the browser: executors, edges, nested workflows.

The same facts ``Workflow.to_mermaid()`` draws (executor ids, the start executor, each edge
group's kind, a nested workflow as its own graph), shaped for a drawing made in the page. This
module reads definitions only; it must never touch a run or a checkpoint.
"""

from __future__ import annotations

from typing import Any

from checkflow.workflows import Workflow, WorkflowExecutor

__all__ = ["workflow_graph"]


def _label(kind: str, group_conditions: tuple[Any, ...], index: int) -> str:
    if kind != "switch_case":
        return kind
    return "default" if group_conditions[index] is None else f"case {index + 1}"


def workflow_graph(workflow: Workflow) -> dict[str, Any]:
    """``{"name", "start", "executors": [{"id", "type", "workflow"}], "edges": [...]}``;
    a nested workflow's executor carries its child's graph under ``workflow``."""
    executors = []
    for executor_id, executor in workflow.executors.items():
        child = executor.workflow if isinstance(executor, WorkflowExecutor) else None
        kind = type(executor)
        executors.append({"id": executor_id, "type": f"{kind.__module__}.{kind.__qualname__}",
                          "workflow": None if child is None else workflow_graph(child)})
    edges = [
        {"source": source, "target": target, "kind": group.kind,
         "label": _label(group.kind, group.conditions, index)}
        for group in workflow.edge_groups
        for source in group.sources
        for index, target in enumerate(group.targets)
    ]
    return {"name": workflow.name, "start": workflow.start_executor_id,
            "executors": executors, "edges": edges}
