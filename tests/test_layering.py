"""The package's dependency direction (DESIGN §1), checked on the source with ``ast``.

``state`` <- ``sessions``, ``checkpoints`` <- ``storage``; ``checkpoints`` <- ``workflows`` <-
``agents`` <- ``hosting`` <- ``cli``. Every import counts, including those under
``TYPE_CHECKING`` and inside functions, and no layer reaches into another's private modules.
"""

from __future__ import annotations

import ast
from pathlib import Path, PurePosixPath

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "checkflow"

_BASE = {"errors", "_fs"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_fs": {"errors"},
    "state": {"errors"},
    "sessions": {"state", "errors", "_fs"},
    "checkpoints": {"state", "errors", "_fs"},
    "storage": {"checkpoints", "sessions", "state", *_BASE},
    "workflows": {"checkpoints", "state", "errors"},
    "agents": {"workflows", "checkpoints", "sessions", "state", "errors"},
    "hosting": {"agents", "workflows", "storage", "checkpoints", "sessions", "state", *_BASE},
    "cli": {"hosting", "agents", "workflows", "storage", "checkpoints", "sessions", "state",
            *_BASE},
    "__main__": {"cli"},
}
"""For each part of the package (subpackage or top-level module), what it may import."""

EXCEPTIONS = {
    # Workflow.as_agent() is a convenience the public API promises; it imports the public
    # checkflow.agents lazily, so workflows never imports agents at import time.
    ("workflows/_workflow.py", "agents"),
}
PRIVATE_EXCEPTIONS = {
    # The command line is the hosting layer's own front end: it prints what hosting's
    # inspection helpers compute and starts hosting's server.
    ("cli", "hosting"),
}


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
    problems = []
    for line, module in _imported_modules(ast.parse(source, str(relative))):
        parts = module.split(".")
        if len(parts) < 2 or parts[1] == owner:
            continue
        target = parts[1]
        where = f"{relative}:{line} imports {module}"
        if target not in ALLOWED[owner] and (str(relative), target) not in EXCEPTIONS:
            problems.append(f"{where}: {owner} may not depend on {target}")
        private = any(p.startswith("_") for p in parts[2:])
        if private and (owner, target) not in PRIVATE_EXCEPTIONS:
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


def test_the_documented_exception_holds_only_where_it_is_documented() -> None:
    source = "from checkflow.agents import WorkflowAgent\n"
    assert _violations(PurePosixPath("workflows/_workflow.py"), source) == []
    assert _violations(PurePosixPath("workflows/_runner.py"), source) != []


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_imports_are_absolute_so_this_check_sees_them(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    relative = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert relative == []
