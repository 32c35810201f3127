"""A finished hosted turn leaves no reference cycle behind: everything it made (runner,
checkpoint, events, lease, session) is freed by reference counting as soon as the turn ends,
not later by the cyclic collector (whose passes over that garbage cost a served conversation
CPU; measured with ``bench/hosting.py``)."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import pytest

import checkflow
from checkflow.agents import ScriptedAgent
from checkflow.hosting import AgentHost, HostedRun, WorkflowHost, create_app
from checkflow.sessions import InMemorySessionStore
from checkflow.storage import InMemoryCheckpointStorage
from tests.hosting.hosting_flows import build


@pytest.fixture
def saved_garbage() -> Iterator[Callable[[], Counter[str]]]:
    """Keeps what the collector would free, so a test can see it: ``found()`` collects and
    counts the checkflow objects among it, by type."""
    gc.collect()
    gc.disable()
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.garbage.clear()

    def found() -> Counter[str]:
        gc.collect()
        return Counter(_ours(o) for o in gc.garbage if _ours(o))

    try:
        yield found
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
        gc.enable()


def _ours(obj: object) -> str:
    """What names ``obj`` as checkflow's: its type, or the function a frame runs; else ""."""
    if isinstance(obj, FrameType):
        code = obj.f_code
        return f"frame of {code.co_name}" if _PACKAGE in code.co_filename else ""
    return type(obj).__qualname__ if type(obj).__module__.startswith("checkflow") else ""


_PACKAGE = str(Path(checkflow.__file__).parent)


def _workflow_host() -> WorkflowHost:
    return WorkflowHost(build(), session_store=InMemorySessionStore(),
                        checkpoint_storage=InMemoryCheckpointStorage())


async def _paused_then_answered(host: WorkflowHost, conversation_id: str) -> None:
    paused = await host.run(conversation_id, message="ask me")
    (request_id,) = paused.pending_requests
    done = await host.run(conversation_id, responses={request_id: True})
    assert done.outputs == ["approved"]


async def _streamed(host: WorkflowHost, conversation_id: str) -> None:
    stream = await host.run(conversation_id, message="hello", stream=True)
    assert isinstance(stream, HostedRun)
    events = [event async for event in stream]
    assert events
    assert (await stream.get_result()).outputs == ["HELLO"]


async def _closed_early(host: WorkflowHost, conversation_id: str) -> None:
    stream = await host.run(conversation_id, message="hello", stream=True)
    assert isinstance(stream, HostedRun)
    async for _event in stream:
        break
    await stream.aclose()


TURNS: dict[str, Callable[[WorkflowHost, str], Awaitable[None]]] = {
    "paused and answered": _paused_then_answered,
    "streamed to the end": _streamed,
    "closed mid-run": _closed_early,
}


@pytest.mark.parametrize("turn", list(TURNS))
async def test_a_finished_workflow_turn_leaves_no_cycle(
    saved_garbage: Callable[[], Counter[str]], turn: str,
) -> None:
    host = _workflow_host()
    await TURNS[turn](host, "warm-up")  # first-use caches are not garbage
    saved_garbage()
    gc.garbage.clear()
    for n in range(3):
        await TURNS[turn](host, f"c{n}")
    assert saved_garbage() == Counter()


async def test_a_finished_agent_turn_leaves_no_cycle(
    saved_garbage: Callable[[], Counter[str]],
) -> None:
    host: Any = AgentHost(ScriptedAgent("echo", ["one"]))
    assert (await host.run("warm-up", "hi")).text == "one"
    saved_garbage()
    gc.garbage.clear()
    for n in range(3):
        assert (await host.run(f"c{n}", "hi")).text == "one"
    assert saved_garbage() == Counter()


@pytest.mark.parametrize("query", ["", "?stream=true"])
async def test_a_served_turn_leaves_no_cycle(
    saved_garbage: Callable[[], Counter[str]], query: str,
) -> None:
    app = create_app(_workflow_host())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://checkflow.test") as client:
        async def turn(conversation_id: str) -> None:
            response = await client.post(f"/v1/conversations/{conversation_id}/runs{query}",
                                         json={"message": "hello"})
            assert response.status_code == 200
            assert "HELLO" in response.text

        await turn("warm-up")
        saved_garbage()
        gc.garbage.clear()
        for n in range(3):
            await turn(f"c{n}")
        assert saved_garbage() == Counter()
