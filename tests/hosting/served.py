"""An app served by uvicorn in this process, on 127.0.0.1, through the CLI's own socket."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

from checkflow.cli._serve import _listening as listening


@contextlib.asynccontextmanager
async def served(app: Any) -> AsyncIterator[tuple[str, uvicorn.Server]]:
    """``app`` served on a free port for the block; yields its URL and the server."""
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    with listening("127.0.0.1", 0) as sock:
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        try:
            for _ in range(3000):  # up to 30 s for the server to start
                if server.started or task.done():
                    break
                await asyncio.sleep(0.01)
            assert server.started, "uvicorn did not start"
            yield f"http://127.0.0.1:{sock.getsockname()[1]}", server
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, 30)
