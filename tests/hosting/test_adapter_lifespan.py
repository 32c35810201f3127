"""An adapter's own work beside its requests: ``lifespan(host)`` entered when the app starts
and left when it stops (through the ASGI lifespan a server runs), and the record scan an
adapter's start-up reads (``RecordStore.keys``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from hosting_flows import build
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from checkflow.hosting import Host, WorkflowHost, create_app
from checkflow.sessions import FileSessionStore


class Busy:
    """An adapter whose lifespan records when it ran, for which host."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[tuple[str, Host]] = []

    def routes(self, host: Host) -> list[BaseRoute]:
        async def ping(request: Request) -> Response:
            return PlainTextResponse("pong")

        return [Route(f"/{self.name}/ping", ping)]

    @contextlib.asynccontextmanager
    async def lifespan(self, host: Host) -> AsyncIterator[None]:
        self.seen.append(("started", host))
        try:
            yield
        finally:
            self.seen.append(("stopped", host))


class Plain:
    name = "plain"

    def routes(self, host: Host) -> list[BaseRoute]:
        return []


async def test_an_adapter_s_lifespan_runs_with_the_app(tmp_path: Path) -> None:
    host = WorkflowHost(build(), session_store=FileSessionStore(tmp_path / "s"))
    first, second = Busy("one"), Busy("two")
    app = create_app(host, adapters=[first, Plain(), second])
    assert first.seen == []
    async with app.router.lifespan_context(app):
        assert first.seen == [("started", host)] and second.seen == [("started", host)]
    assert first.seen[-1] == ("stopped", host) and second.seen[-1] == ("stopped", host)


async def test_record_keys_are_every_principal_s_keys_of_one_namespace(tmp_path: Path) -> None:
    host = WorkflowHost(build(), session_store=FileSessionStore(tmp_path / "s"))
    records, other = host.records("push"), host.records("other")
    await records.put("ctx-1", {"n": 1}, principal="ann", create=True)
    await records.put("ctx-1", {"n": 2}, principal="bob", create=True)
    await records.put("ctx-2", {"n": 3}, create=True)
    await other.put("ctx-9", {"n": 4}, principal="ann", create=True)
    await host.run("a-conversation", message="hi", principal="ann")
    assert sorted(await records.keys(), key=str) == sorted(
        [("ann", "ctx-1"), ("bob", "ctx-1"), (None, "ctx-2")], key=str)
    await records.delete("ctx-1", principal="bob")
    assert ("bob", "ctx-1") not in await records.keys()
    assert await other.keys() == [("ann", "ctx-9")]
