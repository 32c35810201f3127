"""The ``openai`` extra stays optional: ``checkflow.agents`` imports without httpx."""

from __future__ import annotations

from fresh_interpreter import run_code


def test_importing_checkflow_never_imports_the_openai_agent() -> None:
    result = run_code(
        "import sys, checkflow, checkflow.agents\n"
        "print('checkflow.agents._openai' in sys.modules)"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_without_httpx_the_import_error_names_the_openai_extra() -> None:
    result = run_code(
        "import sys\n"
        "sys.modules['httpx'] = None  # as if httpx were not installed\n"
        "from checkflow.agents import OpenAIChatAgent\n"
    )
    assert result.returncode != 0
    assert "pip install 'checkflow[openai]'" in result.stderr
