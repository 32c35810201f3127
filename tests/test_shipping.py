"""Shipping: one version source, a changelog entry for it, a complete lock of the development
dependencies, and a distribution (sdist and wheel) that carries the package whole."""

from __future__ import annotations

import email.parser
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import checkflow

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements-dev.lock"


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


# -- the version -------------------------------------------------------------------------------


def test_the_version_is_the_package_metadata_which_is_pyproject_s() -> None:
    assert checkflow.__version__ == version("checkflow") == _project()["version"]


def test_the_version_is_written_only_in_pyproject() -> None:
    literal = re.compile(rf"""["']{re.escape(_project()["version"])}["']""")
    writers = [p.relative_to(REPO).as_posix() for p in sorted((REPO / "checkflow").rglob("*.py"))
               if literal.search(p.read_text())]
    assert writers == []


def _source_tree(tmp_path: Path, pyproject: str | None) -> Path:
    """A ``checkflow`` package holding only ``_version.py``, as a never-installed tree."""
    package = tmp_path / "src" / "checkflow"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copy(REPO / "checkflow" / "_version.py", package / "_version.py")
    if pyproject is not None:
        (tmp_path / "src" / "pyproject.toml").write_text(pyproject)
    return tmp_path / "src"


def _uninstalled_version(tree: Path) -> str:
    # -S: no site-packages, so no installed checkflow metadata (the editable one included)
    code = f"import sys; sys.path.insert(0, {str(tree)!r}); import checkflow._version as v; " \
           "print(v.__version__)"
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          timeout=60, check=False, cwd=tree.parent)  # no egg-info in the way
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_uninstalled_source_tree_reads_the_version_from_its_pyproject(
    tmp_path: Path,
) -> None:
    tree = _source_tree(tmp_path, '[project]\nname = "checkflow"\nversion = "9.8.7"\n')
    assert _uninstalled_version(tree) == "9.8.7"


@pytest.mark.parametrize("pyproject", [None, '[project]\nname = "other"\nversion = "1.0"\n',
                                       "not toml ["], ids=["none", "another-project", "broken"])
def test_a_tree_without_its_own_pyproject_has_the_unknown_version(
    tmp_path: Path, pyproject: str | None
) -> None:
    assert _uninstalled_version(_source_tree(tmp_path, pyproject)) == "0+unknown"


# -- the changelog -----------------------------------------------------------------------------

_RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$")


def _headings() -> list[str]:
    return [line for line in (REPO / "CHANGELOG.md").read_text().splitlines()
            if line.startswith("## ")]


def test_the_changelog_has_an_entry_for_the_version_in_the_metadata() -> None:
    """A release has its dated entry; a development version (``X.Y.Z.devN``, what main
    carries between releases) is "Unreleased", on top of an older release."""
    released = [m.group(1) for h in _headings() if (m := _RELEASE.match(h))]
    current = version("checkflow")
    development = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)\.dev\d+", current)
    if development is None:
        assert current in released
        return
    upcoming = tuple(map(int, development.groups()))
    assert released and all(tuple(map(int, r.split("."))) < upcoming for r in released)
    assert "### " in _unreleased(), "main is ahead of its last release: say what changed"


def _unreleased() -> str:
    text = (REPO / "CHANGELOG.md").read_text()
    return text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]


def test_the_changelog_opens_with_unreleased_then_dated_releases() -> None:
    headings = _headings()
    assert headings[0] == "## [Unreleased]"
    assert [h for h in headings[1:] if not _RELEASE.match(h)] == []


# -- the lock ----------------------------------------------------------------------------------


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in LOCK.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, sep, pinned = line.partition("==")
        assert sep and pinned and " " not in line, f"not an exact pin: {line!r}"
        assert canonicalize_name(name) not in pins, f"pinned twice: {name}"
        pins[canonicalize_name(name)] = pinned
    return pins


def _requirements_of(name: str, extras: frozenset[str]) -> Iterator[Requirement]:
    for text in requires(name) or ():
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": e}) for e in extras or {""}):
            yield requirement


def _dev_closure() -> dict[str, list[Requirement]]:
    """Every distribution ``.[dev]`` installs here, with the requirements that ask for it."""
    asked: dict[str, list[Requirement]] = {}
    done: set[tuple[str, frozenset[str]]] = set()
    todo = [("checkflow", frozenset({"dev"}))]
    while todo:
        name, extras = todo.pop()
        if (canonicalize_name(name), extras) in done:
            continue
        done.add((canonicalize_name(name), extras))
        for requirement in _requirements_of(name, extras):
            if canonicalize_name(requirement.name) != "checkflow":  # not dev's own extras
                asked.setdefault(canonicalize_name(requirement.name), []).append(requirement)
            todo.append((requirement.name, frozenset(requirement.extras)))
    return asked


def test_the_lock_pins_every_package_dev_installs_within_what_each_asks_for() -> None:
    pins = _pins()
    try:
        closure = _dev_closure()
    except PackageNotFoundError as exc:
        pytest.fail(f"{exc.name} is not installed: this environment is older than the lock "
                    "(run make)")
    assert sorted(set(closure) - set(pins)) == []
    drift = sorted(f"{name} {version(name)} (locked {pins[name]})" for name in closure
                   if Version(version(name)) != Version(pins[name]))
    if drift:
        pytest.fail(f"this environment is not the lock's, run make: {', '.join(drift)}")
    outside = sorted(f"{name}=={pins[name]} but {requirement} is asked for"
                     for name, requirements in closure.items() for requirement in requirements
                     if not requirement.specifier.contains(pins[name], prereleases=True))
    assert outside == []


def test_the_lock_keeps_the_hand_kept_tool_pins_and_the_distribution_tools() -> None:
    constraints = dict(line.split("==") for line in
                       (REPO / "constraints.txt").read_text().splitlines()
                       if line and not line.startswith("#"))
    pins = _pins()
    assert {name: pins[name] for name in constraints} == constraints
    assert {"build", "twine", "setuptools", "pip"} <= set(pins)


def test_make_installs_from_the_lock_and_ci_builds_the_distribution() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "LOCK := requirements-dev.lock" in makefile
    assert "-c $(LOCK) -e '.[dev]'" in makefile and "\nlock:" in makefile
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert ci[-2:] == ["make dist", "make test"]  # the tests' result line ends the log


# -- the distribution --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist, and the wheel built from it, as ``make dist`` builds them (offline)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                           str(out), str(REPO)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def _package_files() -> set[str]:
    return {p.relative_to(REPO).as_posix() for p in (REPO / "checkflow").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_wheel_carries_every_module_and_py_typed_and_nothing_else(
    dist: tuple[Path, Path],
) -> None:
    with zipfile.ZipFile(dist[1]) as wheel:
        names = set(wheel.namelist())
    assert "checkflow/py.typed" in names
    packaged = {n for n in names if not n.startswith(f"checkflow-{checkflow.__version__}.")}
    assert packaged == _package_files()


def test_the_wheel_metadata_is_the_project_s(dist: tuple[Path, Path]) -> None:
    info = f"checkflow-{checkflow.__version__}.dist-info"
    with zipfile.ZipFile(dist[1]) as wheel:
        metadata = email.parser.Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        names = set(wheel.namelist())
    project = _project()
    assert metadata["Name"] == "checkflow" and metadata["Version"] == project["version"]
    assert metadata["Requires-Python"] == project["requires-python"]
    assert metadata["License-Expression"] == "MIT" and f"{info}/licenses/LICENSE" in names
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert set(metadata.get_all("Provides-Extra") or ()) == set(project["optional-dependencies"])
    assert "checkflow = checkflow.cli:main" in entry_points


def test_the_sdist_carries_the_package_the_readme_the_changelog_and_the_license(
    dist: tuple[Path, Path],
) -> None:
    root = f"checkflow-{checkflow.__version__}/"
    with tarfile.open(dist[0]) as sdist:
        names = {n.removeprefix(root) for n in sdist.getnames()}
    assert {"pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE"} <= names
    assert _package_files() <= names


def test_twine_accepts_both(dist: tuple[Path, Path]) -> None:
    done = subprocess.run([sys.executable, "-m", "twine", "--no-color", "check", "--strict",
                           *map(str, dist)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2

