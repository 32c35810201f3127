# ruff: noqa: UP031  (JSON templates read best with %s holes)
"""Bounds on every door: ``serve --adapters native,agui,a2a,foundry`` on loopback, attacked as
an outsider would, on every route that takes a body (native runs, AG-UI, A2A JSON-RPC and
REST, Responses): a body one byte over the limit, a 200 MiB chunked body, 1,000-deep JSON in
each field that takes JSON, a body that trickles in, and more connections than the limit.
Each gets its protocol's typed refusal, and the server's memory does not grow."""

from __future__ import annotations

import asyncio
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")
pytest.importorskip("openai")

pytestmark = pytest.mark.slow

Start = Any
Gates = Any
TARGET = "a2a_e2e_flows:workflow"
ADAPTERS = ("--adapters", "native,agui,a2a,foundry")
LIMIT = 1_048_576
DEEP = "[" * 1000 + "]" * 1000
HOLE = '"@@"'  # where a field's deep value goes in a body template


@dataclass(frozen=True)
class Door:
    """One route that takes a JSON body, and how it says "refused"."""

    name: str
    path: str
    fields: tuple[str, ...]  # one valid JSON body per field taking JSON, with one HOLE
    protocol: str  # native | jsonrpc | rest | openai

    def bodies(self) -> list[tuple[str, bytes]]:
        return [(f, f.replace(HOLE, DEEP).encode()) for f in self.fields]


_A2A_MESSAGE = ('{"messageId": "m-1", "role": "ROLE_USER", "parts": [%s], "metadata": %s}')
DOORS = [
    Door("native", "/v1/conversations/bounds/runs", (
        '{"message": %s}' % HOLE,
        '{"responses": {"r-1": %s}}' % HOLE,
    ), "native"),
    Door("agui", "/agui", tuple(
        '{"threadId": "t-1", "runId": "r-1", "messages": [{"id": "m-1", "role": "user", '
        '"content": "hi"}], "tools": [%s], "context": [], "state": %s, '
        '"forwardedProps": %s}' % fields for fields in (
            ('{"name": "f", "description": "d", "parameters": %s}' % HOLE, "{}", "{}"),
            ("", HOLE, "{}"),
            ("", "{}", HOLE),
        )), "native"),
    Door("a2a-jsonrpc", "/a2a", tuple(
        '{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": %s}}'
        % (_A2A_MESSAGE % fields) for fields in (
            ('{"data": {"data": %s}}' % HOLE, "{}"),
            ('{"text": "hi"}', '{"deep": %s}' % HOLE),
        )), "jsonrpc"),
    Door("a2a-rest", "/a2a/rest/message:send", tuple(
        '{"message": %s}' % (_A2A_MESSAGE % fields) for fields in (
            ('{"data": {"data": %s}}' % HOLE, "{}"),
            ('{"text": "hi"}', '{"deep": %s}' % HOLE),
        )), "rest"),
    Door("responses", "/responses", (
        '{"model": "m", "input": %s}' % HOLE,
        '{"model": "m", "input": "hi", "metadata": {"k": %s}}' % HOLE,
        '{"model": "m", "input": "hi", "tools": [{"type": "function", "name": "f", '
        '"parameters": %s}]}' % HOLE,
    ), "openai"),
]
def _streaming(door: Door, name: str, path: str, change: tuple[str, str]) -> Door:
    """``door``'s streaming (SSE) twin: the same fields, ``change`` applied to each body."""
    return Door(name, path, tuple(f.replace(*change) for f in door.fields), door.protocol)


DOORS += [
    _streaming(DOORS[0], "native-sse", DOORS[0].path + "?stream=true", ("", "")),
    _streaming(DOORS[2], "a2a-jsonrpc-sse", "/a2a",
               ('"SendMessage"', '"SendStreamingMessage"')),
    _streaming(DOORS[3], "a2a-rest-sse", "/a2a/rest/message:stream", ("", "")),
    _streaming(DOORS[4], "responses-sse", "/responses",
               ('{"model": "m"', '{"stream": true, "model": "m"')),
]
HEADERS = {"content-type": "application/json", "a2a-version": "1.0"}


def _refusal(door: Door, response: httpx.Response, code: str) -> None:
    """``response`` is ``door``'s protocol's typed refusal for ``code``."""
    body = response.json()
    if door.protocol == "native":
        status = {"body_too_large": 413, "too_deeply_nested": 422, "body_timeout": 408}[code]
        assert (response.status_code, body["error"]["code"]) == (status, code), body
    elif door.protocol == "jsonrpc":
        rpc = {"body_too_large": -32600, "too_deeply_nested": -32602, "body_timeout": -32600}
        assert response.status_code == (408 if code == "body_timeout" else 200)
        assert body["jsonrpc"] == "2.0" and body["id"] is None, body
        assert body["error"]["code"] == rpc[code], body
        assert body["error"]["data"][0]["metadata"]["reason"] == code, body
    elif door.protocol == "rest":
        status = {"body_too_large": 413, "too_deeply_nested": 400, "body_timeout": 408}[code]
        assert response.status_code == status, body
        assert body["error"]["code"] == status and body["error"]["message"], body
        reason = {"too_deeply_nested": "INVALID_PARAMS"}.get(code, "INVALID_REQUEST")
        assert body["error"]["details"][0]["reason"] == reason, body
    else:
        status = {"body_too_large": 413, "too_deeply_nested": 400, "body_timeout": 408}[code]
        assert response.status_code == status, body
        assert set(body["error"]) == {"message", "type", "param", "code"}, body
        assert body["error"]["type"] == "invalid_request_error", body
    assert response.headers.get("connection") == "close"


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _huge_chunked(host: str, port: int, path: str, total: int = 200 * 1024 * 1024) -> bytes:
    """POST a chunked body of up to ``total`` bytes; stop sending once the server answers.

    Returns what the server sent (its whole answer: it closes the connection after it)."""
    chunk = b"[" + b" " * (64 * 1024 - 1)
    frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    sock = socket.create_connection((host, port), timeout=30)
    answer = b""
    try:
        sock.sendall(f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                     "a2a-version: 1.0\r\ntransfer-encoding: chunked\r\n\r\n".encode())
        sent = 0
        sock.setblocking(False)
        while sent < total:  # bounded: 3,200 frames at most
            try:
                answer += sock.recv(65536)
                break  # the server answered before the body ended
            except BlockingIOError:
                pass
            try:
                sock.setblocking(True)
                sock.sendall(frame)
                sock.setblocking(False)
            except OSError:
                break  # closed by the server: its answer is waiting to be read
            sent += len(chunk)
        sock.setblocking(True)
        sock.settimeout(30)
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                break
            if not data:
                break
            answer += data
    finally:
        sock.close()
    return answer


def _parse(raw: bytes) -> httpx.Response:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = [tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:]]
    return httpx.Response(status, headers=headers, content=body)


@pytest.fixture
def server(start_server: Start) -> Any:
    return start_server(TARGET, None, *ADAPTERS)


def _over_limit(door: Door) -> bytes:
    """A valid JSON body for ``door`` padded to exactly one byte over the limit."""
    base = door.fields[0].replace(HOLE, '"x"').encode()
    return base + b" " * (LIMIT + 1 - len(base))


@pytest.mark.parametrize("door", DOORS, ids=[d.name for d in DOORS])
async def test_every_door_refuses_a_body_one_byte_over_the_limit(server: Any, door: Door) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        body = _over_limit(door)
        assert len(body) == LIMIT + 1
        _refusal(door, await client.post(door.path, content=body, headers=HEADERS),
                 "body_too_large")
        # the same body without a content-length (streamed in chunks) is refused as well
        async def chunks() -> Any:
            for start in range(0, len(body), 65536):
                yield body[start:start + 65536]

        _refusal(door, await client.post(door.path, content=chunks(), headers=HEADERS),
                 "body_too_large")


@pytest.mark.parametrize("door", DOORS, ids=[d.name for d in DOORS])
async def test_every_door_refuses_json_nested_1000_deep_in_each_field(
    server: Any, door: Door,
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        for field, body in door.bodies():
            response = await client.post(door.path, content=body, headers=HEADERS)
            _refusal(door, response, "too_deeply_nested")
            assert field  # every field of the door was tried
        # and nothing ran: the native view of the conversation the bodies named is empty
        assert (await client.get("/v1/conversations/bounds")).status_code == 404
    assert "RecursionError" not in "".join(server.output)


def test_a_200_mib_chunked_body_is_cut_off_and_memory_stays_flat(server: Any) -> None:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    pid = server.process.pid
    for door in DOORS:  # warm every door once, then measure
        _refusal(door, _parse(_huge_chunked(host, int(port), door.path, 4 * LIMIT)),
                 "body_too_large")
    before = _rss(pid)
    for i in range(20):
        door = DOORS[i % len(DOORS)]
        answer = _huge_chunked(host, int(port), door.path)
        _refusal(door, _parse(answer), "body_too_large")
    grown = _rss(pid) - before
    assert grown < 8 * 1024 * 1024, f"server RSS grew by {grown / 1e6:.1f} MB"
    assert server.process.poll() is None


async def _trickle(host: str, port: int, path: str) -> bytes:
    """A complete head, then one byte of a 100-byte body; what the server answers."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                     "a2a-version: 1.0\r\ncontent-length: 100\r\n\r\n{".encode())
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 60)  # to EOF: the server closes
    finally:
        writer.close()


async def test_a_body_that_trickles_in_is_answered_408_and_closed_on_every_door(
    start_server: Start,
) -> None:
    server = start_server(TARGET, None, *ADAPTERS, "--body-timeout", "1")
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    started = time.monotonic()
    answers = await asyncio.gather(*(_trickle(host, int(port), d.path) for d in DOORS))
    for door, answer in zip(DOORS, answers, strict=True):
        _refusal(door, _parse(answer), "body_timeout")
    assert time.monotonic() - started < 30  # cut at about a second, not held for minutes


async def test_past_the_connection_limit_the_503_is_json(start_server: Start,
                                                         gates: Gates) -> None:
    server = start_server("e2e_flows:workflow", None, "--limit-concurrency", "3")
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        held = [asyncio.ensure_future(client.post(f"/v1/conversations/h{i}/runs",
                                                  json={"message": f"hold:h{i}"}))
                for i in range(2)]
        for i in range(2):
            await asyncio.to_thread(gates.wait_entered, f"h{i}")
        # two requests run; one more connection reaches the limit of three
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as other:
            busy = await other.get("/healthz")
        assert busy.status_code == 503, busy.text
        assert busy.headers["content-type"] == "application/json"
        assert busy.json()["error"]["code"] == "server_busy"
        assert busy.headers["retry-after"] == "1"
        for i in range(2):
            gates.release(f"h{i}")
        done = await asyncio.gather(*held)
        assert [r.json()["outputs"] for r in done] == [["HOLD:H0"], ["HOLD:H1"]]


def _deep_metadata(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_a2a_client_gets_a_typed_error_for_deep_metadata(
    start_server: Start, binding: str, streaming: bool,
) -> None:
    # protobuf's own depth limit (100) keeps the client below 64 levels: a lower bound here
    server = start_server(TARGET, None, *ADAPTERS, "--max-json-depth", "16")
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types import a2a_pb2
    from a2a.utils.errors import InvalidParamsError
    from google.protobuf import json_format

    async with httpx.AsyncClient(timeout=60) as http:
        client = await ClientFactory(ClientConfig(
            httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding],
        )).create_from_url(server.url)
        message = a2a_pb2.Message(message_id="m-deep", role=a2a_pb2.ROLE_USER,
                                  parts=[a2a_pb2.Part(text="hi")])
        json_format.ParseDict(_deep_metadata(30), message.metadata)
        with pytest.raises(InvalidParamsError, match="nests deeper than 16"):
            async for _ in client.send_message(a2a_pb2.SendMessageRequest(message=message)):
                pass


def test_the_openai_client_gets_a_typed_413(server: Any) -> None:
    import openai

    client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0, timeout=60)
    with pytest.raises(openai.APIStatusError) as raised:
        client.responses.create(model="m", input="x" * (LIMIT + 1))
    assert raised.value.status_code == 413
    assert "larger than 1048576 bytes" in str(raised.value.message)



async def test_the_body_flags_set_the_bounds_every_door_keeps(start_server: Start) -> None:
    server = start_server(TARGET, None, *ADAPTERS, "--max-body-bytes", "1000",
                          "--max-json-depth", "5")
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        for door in DOORS:
            base = door.fields[0].replace(HOLE, '"x"').encode()
            padded = base + b" " * (1001 - len(base))
            _refusal(door, await client.post(door.path, content=padded, headers=HEADERS),
                     "body_too_large")
            deep = door.fields[0].replace(HOLE, "[[[[[[1]]]]]]").encode()
            _refusal(door, await client.post(door.path, content=deep, headers=HEADERS),
                     "too_deeply_nested")


def test_an_unauthenticated_server_beyond_loopback_says_it_is_single_tenant(
    start_server: Start,
) -> None:
    quiet = start_server(TARGET, None, *ADAPTERS)
    loud = start_server(TARGET, None, *ADAPTERS, "--host", "0.0.0.0")
    for server in (quiet, loud):
        server.stop()  # nothing is sent to it: only what it said at startup is read
    deadline = time.monotonic() + 30  # the output is read by a thread until the pipe closes
    while "same tenant" not in "".join(loud.output) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "every client is the same tenant" in "".join(loud.output)
    assert "no --authenticate" not in "".join(quiet.output)
