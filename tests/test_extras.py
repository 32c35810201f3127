"""Every optional import names its extra: a missing dependency is a ``MissingExtraError``
(a ``ModuleNotFoundError`` keeping ``name``) saying ``pip install 'checkflow[EXTRA]'``.

Each case runs in a fresh interpreter whose import system refuses the dependency (a meta path
finder placed first, as if the package were not installed), everything else installed.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from fresh_interpreter import run_code

REPO = Path(__file__).resolve().parents[1]

_PRELUDE = '''
import importlib, importlib.abc, json, sys

class Refuse(importlib.abc.MetaPathFinder):
    """Refuses the modules ``refused(name)`` says, as an environment without them would."""

    def __init__(self, refused):
        self.refused = refused

    def find_spec(self, name, path=None, target=None):
        if self.refused(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

def outcome(run):
    try:
        run()
    except Exception as exc:
        return {"type": type(exc).__name__, "name": getattr(exc, "name", None),
                "message": str(exc), "module_not_found": isinstance(exc, ModuleNotFoundError)}
    return None
'''

_ONE_CASE = """
sys.meta_path.insert(0, Refuse(lambda name: name == BLOCKED or name.startswith(BLOCKED + ".")))
def run():
    STATEMENT
print(json.dumps(outcome(run)))
"""


def _one_case(blocked: str, statement: str) -> str:
    case = _ONE_CASE.replace("BLOCKED", repr(blocked)).replace("STATEMENT", statement)
    return _PRELUDE + case


CASES = [
    ("hosting", "starlette", "from checkflow.hosting import read_json"),
    ("hosting", "starlette", "from checkflow.hosting import create_app; create_app(None)"),
    ("foundry", "starlette", "import checkflow.adapters.foundry"),
    ("agui", "ag_ui", "import checkflow.adapters.agui"),
    ("agui", "starlette", "import checkflow.adapters.agui"),
    ("agui", "jsonpatch", "import checkflow.adapters.agui"),
    ("a2a", "a2a", "from checkflow.adapters.a2a import A2AAdapter"),
    ("a2a", "google", "from checkflow.adapters.a2a import A2ATaskStore"),
    ("a2a", "starlette", "from checkflow.adapters.a2a import default_adapter"),
    ("cosmos", "azure", "import checkflow.storage.cosmos"),
    ("cosmos", "aiohttp", "import checkflow.storage.cosmos"),
    ("otel", "opentelemetry", "import checkflow.telemetry"),
    ("otel", "opentelemetry.exporter",
     "from checkflow.telemetry import configure_from_environment; configure_from_environment()"),
    ("openai", "httpx", "from checkflow.agents import OpenAIChatAgent"),
]
"""(extra, the module refused, what a user runs): one row per import site and dependency."""

NO_IMPORT_SITE = {
    "dev": "the development tools",
    "all": "every extra above together",
    "hosting-standard": "uvicorn's compiled stack, which uvicorn picks up itself",
}


def _outcome(code: str) -> dict[str, object] | None:
    done = run_code(code)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] | None = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(("extra", "blocked", "statement"), CASES,
                         ids=[f"{e}-without-{b}" for e, b, _ in CASES])
def test_a_missing_dependency_names_the_extra_that_installs_it(
    extra: str, blocked: str, statement: str
) -> None:
    outcome = _outcome(_one_case(blocked, statement))
    assert outcome is not None, f"{statement!r} worked without {blocked}"
    assert outcome["type"] == "MissingExtraError", outcome
    assert outcome["module_not_found"] and outcome["name"] == blocked
    assert f"pip install 'checkflow[{extra}]'" in str(outcome["message"])


def test_every_extra_with_code_behind_it_has_a_case() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert {extra for extra, _, _ in CASES} == set(extras) - set(NO_IMPORT_SITE)


_BARE = _PRELUDE + '''
from pathlib import Path
allowed = set(sys.stdlib_module_names) | {"checkflow", "msgspec"}
sys.meta_path.insert(0, Refuse(lambda name: name.partition(".")[0] not in allowed))

package = Path(sys.argv[1])
public = []
for path in sorted(package.rglob("*.py")):
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if not any(part.startswith("_") for part in parts):
        public.append(".".join(parts))

failed = {}
for name in public:
    result = outcome(lambda: importlib.import_module(name))
    if result is not None:
        failed[name] = result
        continue
    module = sys.modules[name]
    for attr in getattr(module, "__all__", ()):
        result = outcome(lambda: getattr(module, attr))
        if result is not None:
            failed[f"{name}.{attr}"] = result
print(json.dumps(failed))
'''

BARE_FAILURES = {
    "checkflow.adapters.agui": "agui",
    "checkflow.adapters.foundry": "foundry",
    "checkflow.storage.cosmos": "cosmos",
    "checkflow.telemetry": "otel",
    "checkflow.adapters.a2a.": "a2a",  # the adapter and its store; its types need no extra
    "checkflow.agents.": "openai",  # OpenAIChatAgent
    "checkflow.hosting.": "hosting",  # the adapter toolkit (read_json, sse_response, ...)
    "checkflow.inspector": "hosting",  # a Starlette app
}
"""Where a core-only install stops, by module (or module prefix): the extra it names."""


def _expected_extra(what: str) -> str | None:
    for where, extra in BARE_FAILURES.items():
        if what == where or (where.endswith(".") and what.startswith(where)):
            return extra
    return None


def test_with_only_the_core_installed_every_public_module_imports_or_names_its_extra() -> None:
    code = _BARE.replace("sys.argv[1]", repr(str(REPO / "checkflow")))
    failed = _outcome(code)
    assert failed is not None
    wrong = {what: result for what, result in failed.items()
             if not isinstance(result, dict) or result["type"] != "MissingExtraError"
             or f"checkflow[{_expected_extra(what)}]" not in result["message"]}
    assert wrong == {}
    stopped = {where for where in BARE_FAILURES
               if any(what == where or what.startswith(where) for what in failed)}
    assert stopped == set(BARE_FAILURES)  # each is still optional (and found by the sweep)
