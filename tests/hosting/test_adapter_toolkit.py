"""An adapter built only from public ``checkflow.hosting`` names serves either host.

The "echo protocol" below is what a new adapter author writes: a body read into a msgspec
Struct by the toolkit (413/415/422 come from it), a plain JSON answer, and an SSE stream with
pings and ids. It is mounted under ``/echo`` as a sub-app of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest
from hosting_flows import Gate, build
from served import served
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from checkflow.agents import AgentResponse, ScriptedAgent
from checkflow.errors import AdapterConflictError
from checkflow.hosting import (
    AgentHost,
    Host,
    ServerSentEvent,
    WorkflowHost,
    create_app,
    json_response,
    jsonable,
    read_json,
    request_principal,
    sse_response,
)
from checkflow.workflows import Interceptor, RunInfo


class EchoBody(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    repeat: int = 1


class EchoAdapter:
    """POST /echo runs the host; POST /echo/stream streams its events as SSE."""

    name = "echo"
    prefixes = ("/echo",)

    def __init__(self, ping_interval: float = 15.0) -> None:
        self.ping_interval = ping_interval

    def routes(self, host: Host) -> list[BaseRoute]:
        async def echo(request: Request) -> Response:
            body = await read_json(request, EchoBody, max_body_bytes=256)
            result = await host.run("echo", message=body.text * body.repeat,
                                    principal=request_principal(request))
            return json_response({"outputs": jsonable(_texts(result.outputs))})

        async def stream(request: Request) -> Response:
            body = await read_json(request, EchoBody)
            run = await host.run("echo", message=body.text, stream=True,
                                 principal=request_principal(request))

            async def events() -> AsyncIterator[ServerSentEvent]:
                async for event in run:
                    yield ServerSentEvent({"type": type(event).__name__}, event="step",
                                          id=event.sequence)
                yield ServerSentEvent({"status": (await run.get_result()).status.value},
                                      event="done")

            return sse_response(events(), ping_interval=self.ping_interval)

        return [Route("/echo", echo, methods=["POST"]),
                Route("/echo/stream", stream, methods=["POST"])]


def _texts(outputs: list[Any]) -> list[Any]:
    return [o.text if isinstance(o, AgentResponse) else o for o in outputs]


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


@pytest.mark.parametrize("kind", ["workflow", "agent"])
async def test_the_echo_adapter_serves_either_host_unchanged(kind: str) -> None:
    host: Host = (WorkflowHost(build()) if kind == "workflow"
                  else AgentHost(ScriptedAgent("echo", ["hello", "hello"])))
    async with _client(create_app(host, adapters=[EchoAdapter()])) as client:
        answer = await client.post("/echo", json={"text": "hi"})
        assert answer.status_code == 200
        assert answer.json() == {"outputs": ["HI"] if kind == "workflow" else ["hello"]}
        streamed = await client.post("/echo/stream", json={"text": "yo"})
    frames = [f for f in streamed.text.split("\n\n") if f]
    ids = [int(line[4:]) for f in frames for line in f.split("\n") if line.startswith("id: ")]
    assert ids == list(range(1, len(ids) + 1)) and ids
    assert frames[-1].startswith("event: done")


async def test_the_toolkit_answers_413_415_and_422_naming_the_field() -> None:
    async with _client(create_app(WorkflowHost(build()), adapters=[EchoAdapter()])) as client:
        too_big = await client.post("/echo", json={"text": "x" * 500})
        wrong_type = await client.post("/echo", content=b"text=hi",
                                       headers={"content-type": "text/plain"})
        bad_field = await client.post("/echo", json={"text": "hi", "repeat": "twice"})
        unknown = await client.post("/echo", json={"text": "hi", "colour": "red"})
        malformed = await client.post("/echo", content=b"{", headers={
            "content-type": "application/json"})
        deep = await client.post("/echo", content=b"[" * 100 + b"]" * 100,
                                 headers={"content-type": "application/json"})
    assert (too_big.status_code, too_big.json()["error"]["code"]) == (413, "body_too_large")
    assert wrong_type.status_code == 415
    assert bad_field.status_code == 422 and "$.repeat" in bad_field.json()["error"]["message"]
    assert unknown.status_code == 422 and "colour" in unknown.json()["error"]["message"]
    assert malformed.status_code == 400
    assert (deep.status_code, deep.json()["error"]["code"]) == (422, "too_deeply_nested")


async def test_an_idle_stream_sends_pings_and_a_cancel_ends_it_cancelled() -> None:
    gate = Gate()
    host = WorkflowHost(build(gate))
    app = create_app(host, adapters=[EchoAdapter(ping_interval=0.05)])
    lines: list[str] = []
    async with served(app) as (url, _), httpx.AsyncClient(base_url=url, timeout=30) as client, \
            client.stream("POST", "/echo/stream", json={"text": "hold"}) as response:
        async for line in response.aiter_lines():
            lines.append(line)
            if line == ": ping" and not gate.release.is_set():
                # the run waits at its gate and the stream stays alive
                assert gate.entered.is_set()
                assert await host.cancel("echo") is True
                gate.release.set()  # (a second cancel of the same run is not needed)
    assert 'data: {"status":"cancelled"}' in lines
    assert (await host.run("echo", message="after")).outputs == ["AFTER"]


class Named:
    def __init__(self, name: str, prefixes: tuple[str, ...], path: str) -> None:
        self.name, self.prefixes, self._path = name, prefixes, path

    def routes(self, host: Host) -> list[BaseRoute]:
        async def ok(request: Request) -> Response:
            return json_response({"adapter": self.name})

        return [Route(self._path, ok)]


@pytest.mark.parametrize(("first", "second"), [
    (("/echo",), ("/echo/v2",)),
    (("/a2a",), ("/a2a",)),
    (("/agui/",), ("/agui",)),
])
def test_overlapping_adapter_prefixes_refuse_to_start_naming_both(
    first: tuple[str, ...], second: tuple[str, ...]
) -> None:
    one = Named("one", first, first[0].rstrip("/") + "/x")
    two = Named("two", second, second[0].rstrip("/") + "/y")
    with pytest.raises(AdapterConflictError, match="one and two overlap"):
        create_app(WorkflowHost(build()), adapters=[one, two])


def test_an_adapter_under_the_native_api_refuses_to_start() -> None:
    with pytest.raises(AdapterConflictError, match="the native API and sneaky"):
        create_app(WorkflowHost(build()), adapters=[Named("sneaky", ("/v1/x",), "/v1/x")])
    with pytest.raises(ValueError, match="outside its declared prefixes"):
        create_app(WorkflowHost(build()), adapters=[Named("stray", ("/a",), "/b")])


async def test_prefixes_are_matched_exactly_and_mounted_side_by_side() -> None:
    app = create_app(WorkflowHost(build()), adapters=[
        Named("agui", ("/agui",), "/agui"), Named("aguix", ("/aguix",), "/aguix")])
    async with _client(app) as client:
        assert (await client.get("/agui")).json() == {"adapter": "agui"}
        assert (await client.get("/aguix")).json() == {"adapter": "aguix"}
        missing = await client.get("/agui/nothing")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


async def test_a_hosts_interceptors_apply_to_every_run_it_makes() -> None:
    seen: list[RunInfo] = []

    class Watch(Interceptor):
        async def run(self, info: RunInfo, call_next: Any) -> Any:
            seen.append(info)
            return await call_next()

    host = WorkflowHost(build(), interceptors=[Watch()])
    await host.run("a", message="x")
    # A streamed turn is handed out once the engine accepted its input: it has started.
    await (await host.run("b", message="y", stream=True)).aclose()
    await (await host.run("c", message="z", stream=True)).get_result()
    assert [i.workflow_name for i in seen] == ["shouter", "shouter", "shouter"]
