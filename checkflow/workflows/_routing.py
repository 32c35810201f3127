"""Edge runners: route one sent message through its source's edge groups.

Routing happens at the end of the superstep the message was sent in, in a deterministic
order, and produces deliveries for the next superstep. Fan-in buffers live in the run's
``edge_states`` under the group's stable id, so a restore between two sources keeps what
the first one sent. This module reads definitions and writes only the run's state.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from checkflow.workflows._edges import EdgeGroup
from checkflow.workflows._runstate import RunState

__all__ = ["route"]

Accepts = Callable[[str, Any], bool]


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _deliver(run: RunState, source_id: str, target_id: str, message: Any,
             accepts: Accepts) -> None:
    if accepts(target_id, message):
        run.deliveries.append(
            {"kind": "message", "source": source_id, "target": target_id, "data": message})


async def route(group: EdgeGroup, run: RunState, source_id: str, message: Any,
                target_id: str | None, accepts: Accepts) -> None:
    """Apply ``group`` to one message ``source_id`` sent (only towards ``target_id`` if set)."""
    kind = group.kind
    targets = group.targets
    if target_id is not None and target_id not in targets:
        return
    if kind in ("edge", "fan_out"):
        for target in targets:
            if target_id is None or target == target_id:
                _deliver(run, source_id, target, message, accepts)
    elif kind == "conditional":
        condition = group.conditions[0]
        assert condition is not None
        if await _maybe_await(condition(message)):
            _deliver(run, source_id, targets[0], message, accepts)
    elif kind == "switch_case":
        for condition, target in zip(group.conditions, targets, strict=True):
            if condition is None or await _maybe_await(condition(message)):
                if target_id is None or target == target_id:
                    _deliver(run, source_id, target, message, accepts)
                break
    elif kind == "multi_selection":
        assert group.selection is not None
        chosen = await _maybe_await(group.selection(message, list(targets)))
        for target in targets:
            if target in chosen and (target_id is None or target == target_id):
                _deliver(run, source_id, target, message, accepts)
    elif kind == "fan_in":
        _buffer_fan_in(group, run, source_id, message, accepts)
    else:  # pragma: no cover - the builder only makes the kinds above
        raise AssertionError(f"unknown edge group kind {kind!r}")


def _buffer_fan_in(group: EdgeGroup, run: RunState, source_id: str, message: Any,
                   accepts: Accepts) -> None:
    """Buffer per source; once every source has sent, deliver all of it as one list."""
    run.reach("edge_states", group.id)
    buffers: dict[str, list[Any]] = run.edges.setdefault(group.id, {}).setdefault(
        "buffers", {})
    buffers.setdefault(source_id, []).append(message)
    if all(buffers.get(source) for source in group.sources):
        collected = [item for source in group.sources for item in buffers[source]]
        del run.edges[group.id]
        _deliver(run, source_id, group.targets[0], collected, accepts)
