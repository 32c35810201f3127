"""The thread view rendered from a lineage's turns: transcript, seen ids, interrupts, runs."""

from __future__ import annotations

from typing import Any

from checkflow.adapters.agui._thread import (
    PROTOCOL,
    ThreadView,
    message_ids,
    turn_origin,
    turn_transcript,
)
from checkflow.agents import ChatMessage
from checkflow.hosting import TurnRecord, jsonable
from checkflow.workflows import PendingRequest, RunStatus


def _turn(turn_id: str, *, protocol: str = PROTOCOL, key: str | None = None,
          messages: list[dict[str, Any]] | None = None, outputs: tuple[Any, ...] = (),
          status: RunStatus = RunStatus.IDLE,
          pending: dict[str, PendingRequest] | None = None) -> TurnRecord:
    data = turn_origin(key or turn_id, messages or []).data if protocol == PROTOCOL else {}
    return TurnRecord(turn_id, key, protocol, data, "committed", status,
                      outputs=outputs, pending_requests=pending or {})


def _ask(request_id: str) -> PendingRequest:
    return PendingRequest(request_id, {"question": "ok?"}, bool, "reviewer")


def test_message_ids_are_the_turns_own_and_in_order() -> None:
    new_id = message_ids("t1")
    assert [new_id(), new_id(), new_id()] == ["t1-1", "t1-2", "t1-3"]


def test_the_origin_records_the_run_id_and_the_new_messages() -> None:
    origin = turn_origin("run-1", [{"id": "u1", "role": "user", "content": "hi"}])
    assert origin.protocol == "agui"
    assert origin.data == {"runId": "run-1",
                           "messages": [{"id": "u1", "role": "user", "content": "hi"}]}


def test_an_agui_turn_is_its_messages_then_its_text_outputs() -> None:
    record = _turn("t1", messages=[{"id": "u1", "role": "user", "content": "hi"}],
                   outputs=("hello", {"not": "text"}, ChatMessage("assistant", "bye")))
    assert turn_transcript(record, jsonable) == [
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "t1-1", "role": "assistant", "content": "hello"},
        {"id": "t1-2", "role": "assistant", "content": "bye"},
    ]


def test_a_native_turn_shows_its_outputs_only() -> None:
    record = _turn("n1", protocol="native", outputs=("answered",))
    assert turn_transcript(record, jsonable) == [
        {"id": "n1-1", "role": "assistant", "content": "answered"}]


def test_the_view_of_a_lineage() -> None:
    turns = [
        _turn("t1", key="run-1", messages=[{"id": "u1", "role": "user", "content": "tea"}],
              outputs=("draft",), status=RunStatus.AWAITING_RESPONSES,
              pending={"r1": _ask("r1")}),
        _turn("n1", protocol="native", outputs=("published",)),
        _turn("t2", key="run-3", messages=[{"id": "u2", "role": "user", "content": "more"}],
              status=RunStatus.AWAITING_RESPONSES, pending={"r2": _ask("r2")}),
    ]
    view = ThreadView.of(turns, jsonable)
    assert [m["content"] for m in view.transcript] == ["tea", "draft", "published", "more"]
    assert view.seen == {"u1", "t1-1", "n1-1", "u2"}
    assert view.issued == {"r1", "r2"}
    assert list(view.open) == ["r2"]
    assert set(view.runs) == {"run-1", "run-3"}


def test_nothing_is_open_once_the_last_turn_did_not_pause() -> None:
    turns = [_turn("t1", status=RunStatus.AWAITING_RESPONSES, pending={"r1": _ask("r1")}),
             _turn("n1", protocol="native", outputs=("done",))]
    view = ThreadView.of(turns, jsonable)
    assert view.open == {} and view.issued == {"r1"}


def test_an_empty_lineage_is_an_empty_thread() -> None:
    view = ThreadView.of([], jsonable)
    assert view.transcript == [] and view.seen == set() and view.issued == set()
