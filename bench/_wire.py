"""The load generator's HTTP: one keep-alive HTTP/1.1 connection on raw asyncio streams.

A client this small costs the load generator little, so the server's CPU is what the bench
sees. It POSTs JSON and reads either a sized body (``Content-Length``) or a chunked one (a
server-sent event stream, which ends when the server closes its last chunk). Used by
``bench/hosting.py`` and ``bench/_conversations.py`` only.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any


class WireError(Exception):
    """The server answered something this client cannot read (names what it got)."""


class Connection:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1 that POSTs JSON."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def post(self, path: str, body: dict[str, Any],
                   headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """POST ``body`` as JSON; the status and the whole body (sized or chunked)."""
        data = json.dumps(body).encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"{extra}Content-Length: {len(data)}\r\n\r\n".encode() + data)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = {k.strip().lower(): v.strip() for k, _, v in
                  (line.partition(":") for line in lines[1:] if line)}
        if "content-length" in fields:
            return status, await self.reader.readexactly(int(fields["content-length"]))
        if fields.get("transfer-encoding", "").lower() == "chunked":
            return status, await self._chunks()
        raise WireError(f"{path}: neither Content-Length nor chunked: {lines[0]} {fields}")

    async def post_json(self, path: str, body: dict[str, Any],
                        headers: dict[str, str] | None = None) -> tuple[int, Any]:
        status, data = await self.post(path, body, headers)
        return status, json.loads(data)

    async def post_events(self, path: str, body: dict[str, Any]) -> tuple[int, list[Any]]:
        """POST and read a server-sent event stream to its end: the JSON of each ``data:``."""
        status, data = await self.post(path, body, {"Accept": "text/event-stream"})
        return status, [json.loads(line[5:]) for line in data.split(b"\n")
                        if line.startswith(b"data:")]

    async def _chunks(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
            if size == 0:
                while (await self.reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return b"".join(parts)
            parts.append(await self.reader.readexactly(size))
            await self.reader.readexactly(2)

    def close(self) -> None:
        self.writer.close()
