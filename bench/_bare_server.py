"""The ceiling for any ASGI server here: a bare Starlette endpoint on checkflow's serve stack.

Parses the JSON body and answers one dict, served by uvicorn with the same ``Config`` and the
same listening socket (``IPPROTO_TCP``, so ``TCP_NODELAY``) as ``python -m checkflow serve``.
Prints the same ``... on http://HOST:PORT`` banner. Used by ``bench/hosting.py`` only.

    python bench/_bare_server.py [--port 0]
"""

from __future__ import annotations

import argparse
import asyncio
import socket

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def run(request: Request) -> JSONResponse:
    body = await request.json()
    return JSONResponse({"conversation_id": request.path_params["conversation_id"],
                         "status": "idle", "outputs": [body.get("message")]})


app = Starlette(routes=[Route("/v1/conversations/{conversation_id}/runs", run,
                              methods=["POST"])])


async def main(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(2048)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    print(f"bare starlette on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    await server.serve(sockets=[sock])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    asyncio.run(main(parser.parse_args().port))
