"""The package's version, read from its one source: the ``version`` in ``pyproject.toml``.

Installed (``pip install``, editable too), that is the distribution's metadata. A source tree
put on ``sys.path`` without installing it has no metadata; there the version is read from the
``pyproject.toml`` beside the package, and is ``0+unknown`` when there is none. An editable
install's metadata is written when it is installed: after changing ``version``, reinstall
(``make`` does, its install step depends on ``pyproject.toml``). Nothing else may write the
version down.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["UNKNOWN", "__version__", "package_version"]

UNKNOWN = "0+unknown"
"""The version of a source tree that is neither installed nor beside its ``pyproject.toml``."""


def _source_tree_version(pyproject: Path) -> str:
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return UNKNOWN
    if project.get("name") != "checkflow" or not isinstance(project.get("version"), str):
        return UNKNOWN
    return str(project["version"])


def package_version() -> str:
    """The installed distribution's version, else the source tree's (see the module doc)."""
    try:
        return version("checkflow")
    except PackageNotFoundError:
        return _source_tree_version(Path(__file__).resolve().parent.parent / "pyproject.toml")


__version__ = package_version()
