"""``STATE_DELTA``: every stream starts from a snapshot; applying its deltas gives each state.

The translator's choice (snapshot first, then a JSON Patch when smaller, nothing when nothing
changed) on hand-made states, any JSON states (hypothesis), and real streams checked against
the shared state of every snapshot the turn committed.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import jsonpatch
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkflow.adapters.agui import AGUIAdapter
from checkflow.adapters.agui._delta import state_patch
from checkflow.adapters.agui._events import RunTranslator
from checkflow.agents import CLIENT_TOOLS_KEY
from checkflow.hosting import WorkflowHost, create_app, jsonable
from checkflow.workflows import inspect_shared_state
from tests.e2e.agui_flows import growing
from tests.e2e.agui_wire import followed_states, parse_sse

# -- the translator's choice ------------------------------------------------------------------


def _kinds(events: list[Any]) -> list[str]:
    return [e.type.value for e in events]


def test_the_first_state_is_a_snapshot_then_a_small_change_is_a_delta() -> None:
    t = RunTranslator("t", "r")
    big = {"log": [f"entry {i}" for i in range(50)], "step": "a"}
    assert _kinds(t.state(big)) == ["STATE_SNAPSHOT"]
    (delta,) = t.state({**big, "step": "b"})
    assert delta.type.value == "STATE_DELTA"
    assert delta.model_dump(mode="json", by_alias=True)["delta"] == [
        {"op": "replace", "path": "/step", "value": "b"}]


def test_an_unchanged_state_sends_nothing_and_a_rewrite_is_a_snapshot() -> None:
    t = RunTranslator("t", "r")
    t.state({"a": 1})
    assert t.state({"a": 1}) == []
    (event,) = t.state({"b": 2})  # the patch would be larger than the state itself
    assert event.type.value == "STATE_SNAPSHOT" and event.snapshot == {"b": 2}


def test_true_and_1_are_different_states() -> None:
    assert state_patch({"flag": True}, {"flag": 1}) in (
        None, [{"op": "replace", "path": "/flag", "value": 1}])
    assert state_patch({"flag": True}, {"flag": True}) == []


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=5),
    max_leaves=25,
)
_states = st.dictionaries(st.text(max_size=5), _json, max_size=6)


def _same(left: Any, right: Any) -> bool:
    encode = msgspec.json.Encoder(order="sorted").encode
    return encode(left) == encode(right)


@settings(deadline=None, max_examples=300)
@given(st.lists(_states, min_size=1, max_size=6))
def test_applying_each_event_to_the_last_state_gives_the_next_state(
    states: list[dict[str, Any]],
) -> None:
    t = RunTranslator("t", "r")
    held: Any = None
    for index, state in enumerate(states):
        for event in t.state(state):
            wire = event.model_dump(mode="json", by_alias=True)
            if wire["type"] == "STATE_SNAPSHOT":
                held = wire["snapshot"]
            else:
                assert index > 0 and held is not None  # never a delta before a snapshot
                size = len(msgspec.json.encode(wire["delta"]))
                assert size < len(msgspec.json.encode(state))
                held = jsonpatch.apply_patch(held, wire["delta"])
        assert _same(held, state), (held, state)


# -- real streams ----------------------------------------------------------------------------


def _input(thread: str, text: str | None = None, **extra: Any) -> dict[str, Any]:
    messages = [] if text is None else [{"id": uuid.uuid4().hex, "role": "user",
                                         "content": text}]
    return {"threadId": thread, "runId": uuid.uuid4().hex, "messages": messages, **extra}


async def _post(client: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = await client.post("/agui", json=body)
    assert response.status_code == 200, response.text
    return parse_sse(response.text)


def _state_kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"].startswith("STATE_")]


async def _committed_states(host: WorkflowHost, thread: str, turn: int) -> list[Any]:
    """The shared state of each snapshot turn ``turn`` (0-based) committed, as JSON, as AG-UI
    shows it (without the client's tools, which the adapter writes with each turn)."""
    checkpoint, _ = await host.get_checkpoint(thread)
    record = (await host.turns(thread))[turn]
    states, snapshot = [], checkpoint.get_snapshot(record.last_snapshot_id)
    while True:
        shared = inspect_shared_state(snapshot)
        shared.pop(CLIENT_TOOLS_KEY, None)
        states.append(jsonable(shared))
        if snapshot.snapshot_id == record.first_snapshot_id:
            break
        snapshot = checkpoint.get_snapshot(snapshot.parent_snapshot_id)
    return states[::-1]


@pytest.fixture
async def grown() -> Any:
    host = WorkflowHost(growing)
    app = create_app(host, adapters=[AGUIAdapter()])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test") as client:
        yield host, client


async def test_each_turn_starts_from_a_snapshot_and_its_deltas_give_each_committed_state(
    grown: Any,
) -> None:
    host, client = grown
    for turn, count in enumerate(("20", "3", "2")):
        events = await _post(client, _input("t", count))
        assert events[-1]["outcome"] == {"type": "success"}
        kinds = _state_kinds(events)
        assert kinds[0] == "STATE_SNAPSHOT"
        if turn > 0:  # the log is long by now: a step's change is smaller as a patch
            assert kinds[1:] == ["STATE_DELTA"] * 3
        assert followed_states(events) == await _committed_states(host, "t", turn)


async def test_a_replay_and_a_reconnect_start_from_a_snapshot_of_the_head(grown: Any) -> None:
    host, client = grown
    body = _input("t", "10")
    done = await _post(client, body)
    replayed = await _post(client, body)
    reconnected = await _post(client, _input("t"))
    head = (await _committed_states(host, "t", 0))[-1]
    for events in (replayed, reconnected):
        assert _state_kinds(events) == ["STATE_SNAPSHOT"]
        assert followed_states(events) == [head]
    assert followed_states(done)[-1] == head


async def test_a_failed_turn_takes_the_client_back_to_the_last_good_state(grown: Any) -> None:
    host, client = grown
    await _post(client, _input("t", "10"))
    good = (await _committed_states(host, "t", 0))[-1]
    failed = await _post(client, _input("t", "fail:5"))
    assert failed[-1]["type"] == "RUN_ERROR"
    followed = followed_states(failed)
    assert followed[0] == good and len(followed[1]["log"]) > len(good["log"])
    assert followed[-1] == good  # after the failure, the state is the head's again
