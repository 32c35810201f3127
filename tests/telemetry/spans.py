"""Reading finished spans: by name, parentage, and the tree under one span."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def one(spans: Sequence[ReadableSpan], name: str, **attributes: object) -> ReadableSpan:
    found = [s for s in named(spans, name)
             if all((s.attributes or {}).get(k) == v for k, v in attributes.items())]
    assert len(found) == 1, (name, attributes, [(s.name, s.attributes) for s in spans])
    return found[0]


def parent_of(spans: Sequence[ReadableSpan], span: ReadableSpan) -> ReadableSpan | None:
    if span.parent is None:
        return None
    for candidate in spans:
        if candidate.context.span_id == span.parent.span_id:
            return candidate
    return None


def is_child(child: ReadableSpan, parent: ReadableSpan) -> bool:
    return (child.parent is not None and child.parent.span_id == parent.context.span_id
            and child.context.trace_id == parent.context.trace_id)


def under(spans: Sequence[ReadableSpan], root: ReadableSpan) -> list[ReadableSpan]:
    """Every span below ``root`` (children, grandchildren, ...)."""
    found: list[ReadableSpan] = []
    frontier = [root]
    while frontier:
        node = frontier.pop()
        kids = [s for s in spans if is_child(s, node)]
        found.extend(kids)
        frontier.extend(kids)
    return found
