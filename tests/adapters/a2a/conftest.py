"""Fixtures for the A2A tests: a host on file stores, the app, and official a2a-sdk clients.

Clients talk to the app in process through ``httpx.ASGITransport``; ``binding`` runs a test
over JSON-RPC and over HTTP+JSON (REST).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol
from a2a_flows import Gate, build

from checkflow.adapters.a2a import A2AAdapter
from checkflow.hosting import WorkflowHost, create_app
from checkflow.sessions import FileSessionStore
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import Workflow

BASE = "http://a2a.test"


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def workflow(gate: Gate) -> Workflow:
    return build(gate)


@pytest.fixture
def stores(tmp_path: Path) -> tuple[FileSessionStore, FileCheckpointStorage]:
    return FileSessionStore(tmp_path / "sessions"), FileCheckpointStorage(tmp_path / "cps")


@pytest.fixture
def host(workflow: Workflow, stores: tuple[FileSessionStore, FileCheckpointStorage]
         ) -> WorkflowHost:
    return WorkflowHost(workflow, session_store=stores[0], checkpoint_storage=stores[1])


def authenticate(request: Any) -> str | None:
    """The bearer token is the principal (no token: anonymous is refused)."""
    token = str(request.headers.get("authorization", ""))
    return token.removeprefix("Bearer ") or None


def make_app(host: WorkflowHost, **adapter: Any) -> Any:
    return create_app(host, adapters=[A2AAdapter(**adapter)], authenticate=authenticate)


@pytest.fixture
def app(host: WorkflowHost) -> Any:
    return make_app(host)


@pytest.fixture(params=[TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON],
                ids=["jsonrpc", "rest"])
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param.value)


ClientMaker = Callable[..., Awaitable[Client]]


@pytest.fixture
async def connect(app: Any, binding: str) -> AsyncIterator[ClientMaker]:
    """``await connect(principal="alice", streaming=False, app=...)`` -> an a2a client."""
    opened: list[httpx.AsyncClient] = []

    async def make(principal: str = "alice", *, streaming: bool = False,
                   target: Any = None) -> Client:
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=target or app),
                                 base_url=BASE, timeout=30,
                                 headers={"authorization": f"Bearer {principal}"})
        opened.append(http)
        factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming,
                                             supported_protocol_bindings=[binding]))
        return await factory.create_from_url(BASE)

    yield make
    for http in opened:
        await http.aclose()


def user_message(*parts: a2a_pb2.Part | str, context_id: str | None = None,
                 task_id: str | None = None) -> a2a_pb2.Message:
    message = a2a_pb2.Message(
        message_id=uuid.uuid4().hex, role=a2a_pb2.ROLE_USER,
        parts=[a2a_pb2.Part(text=p) if isinstance(p, str) else p for p in parts])
    if context_id:
        message.context_id = context_id
    if task_id:
        message.task_id = task_id
    return message


async def send(client: Client, message: a2a_pb2.Message, **config: Any
               ) -> list[a2a_pb2.StreamResponse]:
    request = a2a_pb2.SendMessageRequest(
        message=message, configuration=a2a_pb2.SendMessageConfiguration(**config))
    return [event async for event in client.send_message(request)]


async def send_task(client: Client, message: a2a_pb2.Message, **config: Any) -> a2a_pb2.Task:
    """A blocking send whose answer must be a task."""
    (response,) = await send(client, message, **config)
    assert response.HasField("task"), response
    return response.task


def gate_follow(host: WorkflowHost, monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """An event set once a subscription calls ``Host.follow`` (it is open and waiting): a
    gate, never a sleep. The in-process transport hands a stream over only once it ended,
    so collect one with ``asyncio.create_task(events_of(stream))`` and open this gate."""
    followed = asyncio.Event()
    real_follow = host.follow

    def follow(*args: Any, **kwargs: Any) -> Any:
        followed.set()
        return real_follow(*args, **kwargs)

    monkeypatch.setattr(host, "follow", follow)
    return followed


async def events_of(stream: AsyncIterator[a2a_pb2.StreamResponse]
                    ) -> list[a2a_pb2.StreamResponse]:
    """Every event of a stream, once it ended."""
    return [event async for event in stream]
