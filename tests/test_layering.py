"""The package's dependency direction (DESIGN §1), checked on the source with ``ast``.

``state`` <- ``sessions``, ``checkpoints`` <- ``storage``; ``checkpoints`` <- ``workflows`` <-
``agents`` <- ``hosting`` <- ``adapters`` / ``telemetry`` / ``inspector`` <- ``cli``. Every
import counts, including those inside functions and (but for the one documented type-only
reference) under ``TYPE_CHECKING``; no layer reaches into another's private modules, and no
adapter imports another adapter.
"""

from __future__ import annotations

import ast
from pathlib import Path, PurePosixPath

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "checkflow"

_BASE = {"errors", "_fs", "_aio", "_random", "_extras"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_fs": {"errors"},
    "_aio": set(),
    "_random": set(),
    "_extras": set(),
    "_version": set(),
    "state": {"errors"},
    "sessions": {"state", "errors", "_fs"},
    "checkpoints": {"state", "errors", "_fs", "_aio", "_random"},
    "storage": {"checkpoints", "sessions", "state", *_BASE},
    "workflows": {"checkpoints", "state", "errors", "_aio", "_random"},
    "agents": {"workflows", "checkpoints", "sessions", "state", "errors", "_extras"},
    "hosting": {"agents", "workflows", "storage", "checkpoints", "sessions", "state", *_BASE},
    "adapters": {"hosting", "agents", "workflows", "checkpoints", "sessions", "state", "errors",
                 "_extras"},
    "inspector": {"hosting", "workflows", "checkpoints", "sessions", "state", "errors",
                  "_extras"},
    "migrate": {"storage", "checkpoints", "state", *_BASE},
    "telemetry": {"hosting", "agents", "workflows", "checkpoints", "state", "errors", "_extras",
                  "_version"},
    "cli": {"adapters", "telemetry", "inspector", "migrate", "hosting", "agents", "workflows",
            "storage", "checkpoints", "sessions", "state", *_BASE, "_version"},
    "__main__": {"cli"},
}
"""For each part of the package (subpackage or top-level module), what it may import."""

TYPE_ONLY_EXCEPTIONS = {
    # Workflow.as_agent() is annotated with the WorkflowAgent it returns; the class itself is
    # handed down by checkflow.agents (set_agent_factory), so there is no runtime import.
    ("workflows/_workflow.py", "agents"),
}


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """The line numbers of imports inside ``if TYPE_CHECKING:`` blocks."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and (
                node.test.id == "TYPE_CHECKING"):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        lines.add(sub.lineno)
    return lines


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every ``checkflow`` module a tree imports; ``from checkflow import x`` is ``checkflow.x``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "checkflow":
                found.extend((node.lineno, f"checkflow.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] == "checkflow"]


def _violations(relative: PurePosixPath, source: str) -> list[str]:
    """What breaks the layering in ``source``, the text of ``checkflow/<relative>``."""
    owner = relative.parts[0].removesuffix(".py")
    if owner == "__init__":
        return []  # the public surface re-exports every subpackage's public names
    tree = ast.parse(source, str(relative))
    type_only = _type_checking_lines(tree)
    problems = []
    for line, module in _imported_modules(tree):
        parts = module.split(".")
        where = f"{relative}:{line} imports {module}"
        if owner == "adapters" and len(parts) > 2 and parts[1] == "adapters" and (
                len(relative.parts) > 1 and parts[2] != relative.parts[1]):
            problems.append(f"{where}: an adapter may not import another adapter")
            continue
        if len(parts) < 2 or parts[1] == owner:
            continue
        target = parts[1]
        excused = line in type_only and (str(relative), target) in TYPE_ONLY_EXCEPTIONS
        if target not in ALLOWED[owner] and not excused:
            problems.append(f"{where}: {owner} may not depend on {target}")
        if any(p.startswith("_") for p in parts[2:]):
            problems.append(f"{where}: a private module of another part of the package")
    return problems


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_part_of_the_package_has_a_declared_layer() -> None:
    owners = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in _sources()}
    assert owners - {"__init__"} <= set(ALLOWED), owners - set(ALLOWED)


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_module_imports_only_its_own_and_lower_layers(path: Path) -> None:
    relative = PurePosixPath(path.relative_to(PACKAGE).as_posix())
    assert _violations(relative, path.read_text()) == []


def test_an_upward_or_private_import_is_reported() -> None:
    # The checker itself: a storage backend importing the engine, a private module of
    # sessions, and `from checkflow import agents` are each caught.
    source = (
        "from checkflow.workflows import Workflow\n"
        "from checkflow.sessions._versions import new_version\n"
        "def later():\n"
        "    from checkflow import agents\n"
    )
    problems = _violations(PurePosixPath("storage/_probe.py"), source)
    assert problems == [
        "storage/_probe.py:1 imports checkflow.workflows: storage may not depend on workflows",
        "storage/_probe.py:2 imports checkflow.sessions._versions: "
        "a private module of another part of the package",
        "storage/_probe.py:4 imports checkflow.agents: storage may not depend on agents",
    ]


def test_workflows_reach_the_agents_only_for_type_checking() -> None:
    # No import cycle between workflows and agents: the one reference is type-only.
    runtime = "from checkflow.agents import WorkflowAgent\n"
    type_only = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n" + "    " + runtime
    assert _violations(PurePosixPath("workflows/_workflow.py"), runtime) != []
    assert _violations(PurePosixPath("workflows/_workflow.py"), type_only) == []
    assert _violations(PurePosixPath("workflows/_runner.py"), type_only) != []


def test_an_adapter_importing_another_adapter_or_private_hosting_is_reported() -> None:
    source = ("from checkflow.adapters.a2a import A2AAdapter\n"
              "from checkflow.hosting._http import read_json\n"
              "from checkflow.adapters.agui._events import x\n")
    assert _violations(PurePosixPath("adapters/agui/_app.py"), source) == [
        "adapters/agui/_app.py:1 imports checkflow.adapters.a2a: "
        "an adapter may not import another adapter",
        "adapters/agui/_app.py:2 imports checkflow.hosting._http: "
        "a private module of another part of the package",
    ]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_imports_are_absolute_so_this_check_sees_them(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    relative = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert relative == []
