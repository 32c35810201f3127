"""The ``cosmos`` extra stays optional: nothing imports azure unless the Cosmos backend is used."""

from __future__ import annotations

from fresh_interpreter import run_code


def test_importing_checkflow_and_its_storages_never_imports_azure() -> None:
    result = run_code(
        "import sys, checkflow, checkflow.storage, checkflow.sessions\n"
        "optional = ('azure', 'checkflow.storage.cosmos')\n"
        "print(sorted(m for m in sys.modules if m.startswith(optional)))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_without_the_sdk_the_import_error_names_the_cosmos_extra() -> None:
    result = run_code(
        "import sys\n"
        "sys.modules['azure'] = None  # as if azure-cosmos were not installed\n"
        "import checkflow.storage.cosmos\n"
    )
    assert result.returncode != 0
    assert "pip install 'checkflow[cosmos]'" in result.stderr
