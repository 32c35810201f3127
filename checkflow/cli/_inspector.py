"""``python -m checkflow inspect --storage URL``: the inspector, read-only, over a storage.

What ``checkflow conversations`` and ``checkpoints`` print, in a browser: every principal's
conversations, their snapshot trees, state and diffs, with no workflow code loaded and no
route that writes. It listens on loopback by default: there is no ``--authenticate`` here,
so whoever reaches the port reads every conversation. This module must never be imported by
library code: it is the command's implementation only.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

__all__ = ["add_inspect_command", "run_inspect"]


def add_inspect_command(commands: Any, default_storage: str, storage_help: str) -> None:
    """The ``inspect`` command's parser."""
    text = "serve the inspector read-only over a storage (no workflow code, no writes)"
    inspect = commands.add_parser("inspect", help=text, description=text)
    inspect.add_argument("--storage", default=default_storage, metavar="URL", help=storage_help)
    inspect.add_argument("--host", default="127.0.0.1",
                         help="default 127.0.0.1 (every principal's conversations are shown: "
                              "keep it on loopback)")
    inspect.add_argument("--port", type=int, default=8001, help="0 picks a free port "
                         "(default 8001)")


def run_inspect(args: argparse.Namespace) -> int:
    """Serve until interrupted; prints the inspector's URL once it listens."""
    asyncio.run(_inspect(args))
    return 0


async def _inspect(args: argparse.Namespace) -> None:
    import uvicorn

    from checkflow.cli._connections import bounded_protocol
    from checkflow.cli._serve import _listening as listening
    from checkflow.cli._storage_url import open_storage
    from checkflow.inspector import create_inspector_app

    if not 0 <= args.port <= 65535:
        raise ValueError(f"port {args.port} is out of range (0-65535)")
    async with open_storage(args.storage, must_exist=True) as stores:
        app = create_inspector_app(stores.session_store, stores.checkpoint_storage,
                                   storage=args.storage)
        config = uvicorn.Config(app, log_config=None, log_level="warning",
                                http=bounded_protocol(10.0), limit_concurrency=200,
                                timeout_keep_alive=5)
        with listening(args.host, args.port) as sock:
            shown = f"[{args.host}]" if ":" in args.host else args.host
            url = f"http://{shown}:{sock.getsockname()[1]}"
            print(f"checkflow: inspecting {args.storage} (read-only) at {url}/inspector/",
                  flush=True)
            await uvicorn.Server(config).serve(sockets=[sock])
