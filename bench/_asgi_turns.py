"""Run N approval conversations over one protocol in process, through the ASGI app ``serve``
builds (``create_app`` with the AG-UI, A2A and Foundry adapters), with no socket and no HTTP
parser: each request is one direct ASGI call. Used by ``bench/instructions.py --protocols``,
which runs it under callgrind; prints nothing.

The conversations are ``bench/_conversations.py``'s (the same bodies and checks as the served
bench), spoken through ``AsgiConnection``, a stand-in for its keep-alive connection.

    python bench/_asgi_turns.py {memory,file} {native,agui,a2a,responses} N
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import tempfile
from typing import Any

from _conversations import CONVERSATIONS
from agui_flows import approval  # tests/e2e, on PYTHONPATH

from checkflow.adapters.a2a import A2AAdapter
from checkflow.adapters.agui import AGUIAdapter
from checkflow.adapters.foundry import FoundryAdapter
from checkflow.checkpoints import CheckpointStorage
from checkflow.hosting import WorkflowHost, create_app
from checkflow.sessions import FileSessionStore, InMemorySessionStore, SessionStore
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage

WARM_UP = 10


class AsgiConnection:
    """``_wire.Connection``'s ``post`` as one ASGI call to ``app`` (the body whole)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def post(self, path: str, body: dict[str, Any],
                   headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        data = json.dumps(body).encode()
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
            "query_string": b"", "root_path": "", "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
            "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                        (b"content-length", str(len(data)).encode()),
                        *((k.lower().encode(), v.encode()) for k, v in
                          (headers or {}).items())]}
        done, chunks, status = asyncio.Event(), list[bytes](), 0
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": data, "more_body": False}
            await done.wait()  # as a client that stays until the answer is whole
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    done.set()

        await self.app(scope, receive, send)
        return status, b"".join(chunks)

    async def post_json(self, path: str, body: dict[str, Any],
                        headers: dict[str, str] | None = None) -> tuple[int, Any]:
        status, data = await self.post(path, body, headers)
        return status, json.loads(data)

    async def post_events(self, path: str, body: dict[str, Any]) -> tuple[int, list[Any]]:
        status, data = await self.post(path, body, {"Accept": "text/event-stream"})
        return status, [json.loads(line[5:]) for line in data.split(b"\n")
                        if line.startswith(b"data:")]


async def main(kind: str, protocol: str, count: int) -> None:
    with tempfile.TemporaryDirectory(prefix="checkflow-asgi-turns-") as folder:
        sessions: SessionStore = (InMemorySessionStore() if kind == "memory"
                                  else FileSessionStore(f"{folder}/sessions"))
        storage: CheckpointStorage = (InMemoryCheckpointStorage() if kind == "memory"
                                      else FileCheckpointStorage(f"{folder}/checkpoints"))
        host = WorkflowHost(approval, session_store=sessions, checkpoint_storage=storage)
        app = create_app(host, adapters=[AGUIAdapter(), A2AAdapter(), FoundryAdapter()])
        http, conversation = AsgiConnection(app), CONVERSATIONS[protocol]
        for n in range(WARM_UP + count):
            await conversation(http, f"c{n}", [])


if __name__ == "__main__":
    gc.freeze()  # as serve does (tune_collector)
    gc.set_threshold(10_000, *gc.get_threshold()[1:])
    args = (sys.argv[1], sys.argv[2], int(sys.argv[3]))
    try:  # serve's loop as shipped (--loop auto)
        import uvloop
    except ImportError:
        asyncio.run(main(*args))
    else:
        uvloop.run(main(*args))
