"""``Workflow.to_mermaid()``: a built graph drawn as a Mermaid flowchart.

Every executor is a node (the start executor a stadium), every edge is labelled with its
group's kind (``edge``, ``conditional``, ``fan_out``, ``fan_in``, ``multi_selection``,
``switch_case``; a switch's branches also say ``case N`` or ``default``), conditional kinds
are dotted, and a nested workflow (``WorkflowExecutor``) is a subgraph holding its child's
graph. Node ids are derived from executor ids (letters, digits and ``_``), so the text can be
parsed back. This module reads definitions only; it must never touch a run or a checkpoint.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from checkflow.workflows._nested import WorkflowExecutor

if TYPE_CHECKING:
    from checkflow.workflows._workflow import Workflow

__all__ = ["to_mermaid"]

_DOTTED = {"conditional", "switch_case", "multi_selection"}


def _node_id(prefix: str, executor_id: str, taken: set[str]) -> str:
    base = prefix + (re.sub(r"[^0-9A-Za-z_]", "_", executor_id) or "_")
    node, n = base, 1
    while node in taken:
        n += 1
        node = f"{base}_{n}"
    taken.add(node)
    return node


def _label(text: str) -> str:
    """Mermaid's quoted label: its entity codes stand for the characters it would misread."""
    return '"' + text.replace("#", "#35;").replace('"', "#quot;") + '"'


def _draw(workflow: Workflow, prefix: str, indent: str, taken: set[str],
          lines: list[str]) -> None:
    nodes: dict[str, str] = {}
    for executor_id, executor in workflow.executors.items():
        node = nodes[executor_id] = _node_id(prefix, executor_id, taken)
        if isinstance(executor, WorkflowExecutor):
            child = executor.workflow
            lines.append(f"{indent}subgraph {node} [{_label(f'{executor_id} ({child.name})')}]")
            _draw(child, node + "__", indent + "  ", taken, lines)
            lines.append(f"{indent}end")
        elif executor_id == workflow.start_executor_id:
            lines.append(f"{indent}{node}([{_label(executor_id)}])")
        else:
            lines.append(f"{indent}{node}[{_label(executor_id)}]")
    for group in workflow.edge_groups:
        arrow = "-.->" if group.kind in _DOTTED else "-->"
        for source in group.sources:
            for i, target in enumerate(group.targets):
                text = group.kind
                if group.kind == "switch_case":
                    text += " default" if group.conditions[i] is None else f" case {i + 1}"
                lines.append(f"{indent}{nodes[source]} {arrow}|{text}| {nodes[target]}")


def to_mermaid(workflow: Workflow) -> str:
    """The flowchart text (``flowchart TD``) of ``workflow`` and its nested workflows."""
    lines = ["flowchart TD"]
    _draw(workflow, "", "  ", set(), lines)
    return "\n".join(lines) + "\n"
