"""The ``hosting`` extra stays optional: hosts run without starlette; create_app names it."""

from __future__ import annotations

from fresh_interpreter import run_code


def test_importing_checkflow_and_its_hosts_never_imports_starlette() -> None:
    result = run_code(
        "import sys, checkflow, checkflow.hosting\n"
        "print(sorted(m for m in sys.modules if m.startswith(('starlette', 'uvicorn'))))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_without_starlette_create_app_names_the_hosting_extra() -> None:
    result = run_code(
        "import sys\n"
        "sys.modules['starlette'] = None  # as if starlette were not installed\n"
        "from checkflow import WorkflowBuilder\n"
        "from checkflow.hosting import WorkflowHost, create_app\n"
        "from checkflow.workflows import Executor, WorkflowContext, handler\n"
        "class Echo(Executor):\n"
        "    @handler\n"
        "    async def echo(self, text: str, ctx: WorkflowContext) -> None: ...\n"
        "create_app(WorkflowHost(WorkflowBuilder(start_executor=Echo(id='e')).build()))\n"
    )
    assert result.returncode != 0
    assert "pip install 'checkflow[hosting]'" in result.stderr
