"""Edge groups: the definition of how messages travel, with stable ids.

An edge group's id is derived from its kind and endpoints only, so it is the same in every
build and every process; it keys the group's entry in ``edge_states``. This module holds
definitions only; routing a message through a group is the runner's job (``_routing.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checkflow.workflows._typing import callable_name

if TYPE_CHECKING:
    from checkflow.workflows._executor import Executor

__all__ = ["Case", "Default", "EdgeGroup"]

Condition = Callable[[Any], "bool | Awaitable[bool]"]
Selection = Callable[[Any, list[str]], "Sequence[str] | Awaitable[Sequence[str]]"]


@dataclass(frozen=True, slots=True)
class Case:
    """One branch of a switch-case group: the first case whose condition holds wins."""

    condition: Condition
    target: Executor


@dataclass(frozen=True, slots=True)
class Default:
    """The branch a switch-case group takes when no case holds (exactly one per group)."""

    target: Executor


@dataclass(frozen=True, slots=True)
class EdgeGroup:
    """A set of edges routed together.

    ``kind`` is one of ``edge``, ``conditional``, ``fan_out``, ``multi_selection``,
    ``fan_in``, ``switch_case``. ``conditions`` holds one condition per target for
    ``conditional`` and ``switch_case`` (``None`` for the default branch).
    """

    kind: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    conditions: tuple[Condition | None, ...] = ()
    selection: Selection | None = None

    @property
    def id(self) -> str:
        """Stable across builds and processes: kind and endpoints, never a random id."""
        return f"{self.kind}:{','.join(self.sources)}->{','.join(self.targets)}"

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """Every (source, target) edge this group contains."""
        return [(s, t) for s in self.sources for t in self.targets]

    def describe(self) -> dict[str, Any]:
        """This group as plain data, for the graph signature (conditions by qualified name)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "sources": list(self.sources),
            "targets": list(self.targets),
            "conditions": [callable_name(c) for c in self.conditions],
            "selection": callable_name(self.selection),
        }
