"""The engine, the hosts and the app never import OpenTelemetry: a fresh interpreter runs a
workflow, hosts it and builds the app without loading it; ``checkflow.telemetry`` does."""

from __future__ import annotations

import os

from fresh_interpreter import run_code

CODE = """
import asyncio, sys
sys.path.insert(0, {root!r})
from tests.hosting.hosting_flows import build as approval
from checkflow.hosting import WorkflowHost, create_app
from checkflow.adapters.agui import AGUIAdapter

async def main():
    await approval().run("tea")
    host = WorkflowHost(approval())
    await host.run("c", message="tea")
    create_app(host, adapters=[AGUIAdapter()])

asyncio.run(main())
print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))
import checkflow.telemetry
print("opentelemetry.trace" in sys.modules)
"""


def test_nothing_but_checkflow_telemetry_imports_opentelemetry() -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = run_code(CODE.format(root=root))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "True"]
