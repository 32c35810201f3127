"""A hosted server: one workflow served over the native API and all three protocol adapters
(A2A, AG-UI and the Responses/Foundry protocol) at once, with run telemetry.

Shows: every protocol reaches the same conversations (an A2A ``contextId``, an AG-UI
``threadId``, a native conversation id and a Responses ``conversation`` are one id space,
per principal), so a run started over
one protocol can be inspected or answered over another; the conversations live in files and
survive a restart. Telemetry: an interceptor logs every run, superstep and snapshot commit
with its duration (``checkflow.workflows.Interceptor``; the OpenTelemetry package replaces it
once it lands).

Run it: ``python samples/hosted.py [PORT]`` (default 8000; it writes ``./.checkflow``), then
e.g. the clients on ``docs/adapters/*.md``, or ``curl``::

    curl -s localhost:8000/v1/conversations/c1/runs -H 'content-type: application/json' \\
         -d '{"message": "owls"}'
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import Any

import uvicorn

from checkflow import FileCheckpointStorage, FileSessionStore, WorkflowHost, create_app
from checkflow.adapters.a2a import A2AAdapter
from checkflow.adapters.agui import AGUIAdapter
from checkflow.adapters.foundry import FoundryAdapter
from checkflow.workflows import CommitInfo, Interceptor, RunInfo, SuperstepInfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from samples.approval import workflow  # the repository root is on the path now

log = logging.getLogger("checkflow.samples.hosted")


class Timings(Interceptor):
    """Logs each run, superstep and commit with how long it took."""

    async def _timed(self, what: str, call_next: Any) -> Any:
        started = time.perf_counter()
        try:
            return await call_next()
        finally:
            log.info("%s took %.1f ms", what, (time.perf_counter() - started) * 1000)

    async def run(self, info: RunInfo, call_next: Any) -> Any:
        return await self._timed(f"run {info.checkpoint_id} ({info.kind})", call_next)

    async def superstep(self, info: SuperstepInfo, call_next: Any) -> None:
        await self._timed(f"superstep {info.superstep} {list(info.executor_ids)}", call_next)

    async def commit(self, info: CommitInfo, call_next: Any) -> Any:
        return await self._timed(f"commit {info.boundary} {info.superstep}", call_next)


def build_app(root: str = "./.checkflow") -> Any:
    """The app: native API (``/v1``), A2A (``/a2a`` and its agent card), AG-UI (``/agui``),
    Responses (``/responses``)."""
    host = WorkflowHost(workflow, session_store=FileSessionStore(f"{root}/sessions"),
                        checkpoint_storage=FileCheckpointStorage(f"{root}/checkpoints"),
                        interceptors=[Timings()])
    return create_app(host, adapters=[A2AAdapter(), AGUIAdapter(), FoundryAdapter()])


async def main(port: int = 8000) -> None:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    server = uvicorn.Server(uvicorn.Config(build_app(), host="127.0.0.1", port=port))
    await server.serve()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 8000))
