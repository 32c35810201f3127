"""Workflow.to_mermaid(): the flowchart parsed back gives the graph's nodes, edges and nesting."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine_samples import Forward

from checkflow.workflows import (
    Case,
    Default,
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
)


class Sink(Executor):
    @handler
    async def take(self, n: int | list[int], ctx: WorkflowContext) -> None:
        await ctx.yield_output(n)


@dataclass
class Chart:
    """What a flowchart says, by labels: nodes, the start node, edges and subgraphs."""

    labels: dict[str, str] = field(default_factory=dict)  # node or subgraph id -> label
    stadiums: set[str] = field(default_factory=set)
    subgraphs: dict[str, set[str]] = field(default_factory=dict)  # subgraph -> member nodes
    edges: set[tuple[str, str, str, str]] = field(default_factory=set)  # src, arrow, text, dst


_NODE = re.compile(r'^(\w+)(\(\[|\[)"(.*)"(\]\)|\])$')
_SUBGRAPH = re.compile(r'^subgraph (\w+) \["(.*)"\]$')
_EDGE = re.compile(r"^(\w+) (-->|-\.->)\|([^|]*)\| (\w+)$")


def _unlabel(text: str) -> str:
    return text.replace("#quot;", '"').replace("#35;", "#")


def parse(text: str) -> Chart:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert lines[0] == "flowchart TD"
    chart, open_subgraphs = Chart(), []
    for line in lines[1:]:
        if m := _SUBGRAPH.match(line):
            chart.labels[m[1]] = _unlabel(m[2])
            chart.subgraphs[m[1]] = set()
            if open_subgraphs:
                chart.subgraphs[open_subgraphs[-1]].add(m[1])
            open_subgraphs.append(m[1])
        elif line == "end":
            open_subgraphs.pop()
        elif m := _NODE.match(line):
            chart.labels[m[1]] = _unlabel(m[3])
            if m[2] == "([":
                chart.stadiums.add(m[1])
            if open_subgraphs:
                chart.subgraphs[open_subgraphs[-1]].add(m[1])
        elif m := _EDGE.match(line):
            chart.edges.add((m[1], m[2], m[3], m[4]))
        else:
            raise AssertionError(f"a line the parser does not know: {line!r}")
    assert open_subgraphs == []
    return chart


def by_label(chart: Chart) -> set[tuple[str, str, str, str]]:
    """Edges by executor id (a subgraph's label is ``<executor id> (<workflow name>)``)."""
    def name(node: str) -> str:
        label = chart.labels[node]
        return label.rsplit(" (", 1)[0] if node in chart.subgraphs else label
    return {(name(s), arrow, text, name(d)) for s, arrow, text, d in chart.edges}


def expected_edges(workflow: Workflow) -> set[tuple[str, str, str, str]]:
    """Derived from the definition, independently of the renderer."""
    found = set()
    for group in workflow.edge_groups:
        dotted = group.kind in ("conditional", "switch_case", "multi_selection")
        for s in group.sources:
            for i, t in enumerate(group.targets):
                text = group.kind
                if group.kind == "switch_case":
                    text += " default" if group.conditions[i] is None else f" case {i + 1}"
                found.add((s, "-.->" if dotted else "-->", text, t))
    return found


def build_child() -> Workflow:
    first, second = Forward('child "a"'), Sink("child#b")
    return WorkflowBuilder(first, name="child").add_edge(first, second).build()


def build_parent() -> Workflow:
    start, a, b, join = Forward("start"), Forward("a"), Forward("b.1"), Sink("join")
    small, big, other = Forward("small"), Sink("big"), Sink("other")
    pick = Forward("pick")
    nested = WorkflowExecutor(build_child(), id="nested")
    return (WorkflowBuilder(start, name="parent")
            .add_fan_out_edges(start, [a, b])
            .add_fan_in_edges([a, b], join)
            .add_switch_case_edge_group(a, [Case(lambda n: n < 5, small), Default(other)])
            .add_edge(small, big, condition=lambda n: n > 1)
            .add_multi_selection_edge_group(b, [pick, nested], lambda n, ids: ids)
            .build())


def test_every_executor_and_edge_comes_back_with_its_kind():
    workflow = build_parent()
    chart = parse(workflow.to_mermaid())

    top_level = set(workflow.executors)
    node_labels = {label for node, label in chart.labels.items() if node not in chart.subgraphs}
    assert top_level - {"nested"} <= node_labels
    assert {chart.labels[n] for n in chart.stadiums} == {"start", 'child "a"'}

    parent_edges = {e for e in by_label(chart) if not e[0].startswith("child")}
    assert parent_edges == expected_edges(workflow)
    kinds = {text.split()[0] for _, _, text, _ in parent_edges}
    assert kinds == {"fan_out", "fan_in", "switch_case", "conditional", "multi_selection"}


def test_a_nested_workflow_is_a_subgraph_holding_its_child_graph():
    workflow = build_parent()
    chart = parse(workflow.to_mermaid())

    (sub,) = chart.subgraphs
    assert chart.labels[sub] == "nested (child)"
    assert {chart.labels[n] for n in chart.subgraphs[sub]} == {'child "a"', "child#b"}
    child_edges = {e for e in by_label(chart) if e[0].startswith("child")}
    assert child_edges == expected_edges(build_child())
    # the parent's edge into the nested workflow ends at the subgraph itself
    assert ("b.1", "-.->", "multi_selection", "nested") in by_label(chart)


def test_node_ids_stay_unique_when_executor_ids_look_alike():
    a, b = Forward("x.y"), Sink("x_y")
    chart = parse(WorkflowBuilder(a).add_edge(a, b).build().to_mermaid())
    assert sorted(chart.labels.values()) == ["x.y", "x_y"]
    assert len(chart.labels) == 2
    assert by_label(chart) == {("x.y", "-->", "edge", "x_y")}


def test_a_grandchild_is_a_subgraph_inside_the_child_subgraph():
    inner = WorkflowExecutor(build_child(), id="inner")
    start = Forward("outer.start")
    middle = WorkflowBuilder(start, name="middle").add_edge(start, inner).build()
    top = Forward("top")
    workflow = WorkflowBuilder(top).add_edge(top, WorkflowExecutor(middle, id="mid")).build()

    chart = parse(workflow.to_mermaid())

    outer = next(s for s in chart.subgraphs if chart.labels[s] == "mid (middle)")
    inner_id = next(s for s in chart.subgraphs if chart.labels[s] == "inner (child)")
    assert inner_id in chart.subgraphs[outer]
    assert ("outer.start", "-->", "edge", "inner") in by_label(chart)
