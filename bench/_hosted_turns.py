"""Run N hosted conversations in process (no HTTP): a message that pauses for approval, then
the answer, through ``WorkflowHost`` on ``memory:`` or ``file:``. Used by
``bench/instructions.py``, which runs it under callgrind; prints nothing.

    python bench/_hosted_turns.py {memory,file} N
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tempfile

from agui_flows import approval  # tests/e2e, on PYTHONPATH

from checkflow.checkpoints import CheckpointStorage
from checkflow.hosting import WorkflowHost
from checkflow.sessions import FileSessionStore, InMemorySessionStore, SessionStore
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage

WARM_UP = 30


async def main(kind: str, count: int) -> None:
    with tempfile.TemporaryDirectory(prefix="checkflow-turns-") as folder:
        sessions: SessionStore = (InMemorySessionStore() if kind == "memory"
                                  else FileSessionStore(f"{folder}/sessions"))
        storage: CheckpointStorage = (InMemoryCheckpointStorage() if kind == "memory"
                                      else FileCheckpointStorage(f"{folder}/checkpoints"))
        host = WorkflowHost(approval, session_store=sessions, checkpoint_storage=storage)
        for n in range(WARM_UP + count):
            paused = await host.run(f"c{n}", message=f"topic {n}")
            (request_id,) = paused.pending_requests
            await host.run(f"c{n}", responses={request_id: True})


if __name__ == "__main__":
    gc.freeze()  # as serve does (tune_collector)
    gc.set_threshold(10_000, *gc.get_threshold()[1:])
    try:  # serve's loop as shipped (--loop auto)
        import uvloop
    except ImportError:
        asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    else:
        uvloop.run(main(sys.argv[1], int(sys.argv[2])))
