"""``BodyGuard``: the one place every request body is read, in process (ASGI, no sockets).

The nesting measure on raw bytes agrees with a parse for any JSON (property test); a body
that trickles in is cut off with 408 while one arriving at the minimum rate is taken; the
app behind the guard receives the body byte for byte; adapters' records are bounded.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkflow.adapters.agui import AGUIAdapter
from checkflow.errors import RecordTooLargeError
from checkflow.hosting import BodyLimits, HttpError, WorkflowHost, create_app
from checkflow.hosting._bounds import BodyGuard, nests_deeper
from checkflow.sessions import InMemorySessionStore
from tests.e2e.agui_flows import chat
from tests.e2e.agui_wire import parse_sse

# -- the nesting measure ----------------------------------------------------------------------

_text = st.text(alphabet=st.sampled_from('ab[]{}"\\:, \u00e9'), max_size=6)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=40,
)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@settings(deadline=None, max_examples=300)
@given(value=_json, limit=st.integers(min_value=1, max_value=12))
def test_the_byte_measure_of_nesting_agrees_with_the_parsed_depth(value: Any, limit: int) -> None:
    for body in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=1)):
        assert nests_deeper(body.encode(), limit) == (_depth(value) > limit)


def test_brackets_inside_strings_do_not_count_and_unclosed_ones_do() -> None:
    assert not nests_deeper(json.dumps(["[" * 500, {"k": "{" * 500}]).encode(), 3)
    assert not nests_deeper(b'["\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]', 3)
    assert nests_deeper(b"[" * 100, 64)  # malformed, yet a parser would recurse into it
    assert nests_deeper(b"[" * 65 + b"]" * 65, 64) and not nests_deeper(b"[" * 64 + b"]" * 64, 64)


# -- the guard on its own ---------------------------------------------------------------------


async def _echo(scope: Any, receive: Any, send: Any) -> None:
    """An app that answers with the body it received and the message that followed it."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"".join(chunks)})


async def _refuse(request: Any, exc: Exception) -> Any:
    from checkflow.hosting import error_response

    return error_response(exc)


def _guard(**limits: Any) -> BodyGuard:
    return BodyGuard(_echo, limits=BodyLimits(**limits), refuse=_refuse, make_error=HttpError)


def _scope(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/x", "headers": headers,
            "query_string": b"", "root_path": ""}


class _Client:
    """Feeds ``chunks`` as ``http.request`` messages, each after ``gap`` seconds (a slow
    client), and records what the guard sends back."""

    def __init__(self, chunks: list[bytes], gap: float = 0.0, *, then_stall: bool = False):
        self.chunks, self.gap, self.then_stall = list(chunks), gap, then_stall
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        if not self.chunks:
            await asyncio.Event().wait()  # never: the client stalls
        if self.gap:
            await asyncio.sleep(self.gap)
        chunk = self.chunks.pop(0)
        return {"type": "http.request", "body": chunk,
                "more_body": bool(self.chunks) or self.then_stall}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.sent[0]["headers"])

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent[1:])


JSON = [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")]


async def test_a_body_that_stalls_is_answered_408_and_closed() -> None:
    client = _Client([b'{"a":'], then_stall=True)
    await asyncio.wait_for(_guard(timeout=0.2)(_scope(JSON), client.receive, client.send), 30)
    assert client.status == 408
    assert client.headers[b"connection"] == b"close"
    assert json.loads(client.body)["error"]["code"] == "body_timeout"


async def test_a_large_body_at_the_minimum_rate_is_taken_past_the_timeout() -> None:
    # 8 chunks of 500 bytes, one every 0.1 s: 0.8 s in all, past a 0.2 s timeout, but each
    # 500 bytes buys another 0.5 s at 1,000 bytes a second
    chunks = [b'["' + b"x" * 497] + [b"x" * 500] * 6 + [b"x" * 498 + b'"]']
    client = _Client(chunks, gap=0.1)
    await asyncio.wait_for(
        _guard(timeout=0.2, min_rate=1000)(_scope(JSON), client.receive, client.send), 30)
    assert client.status == 200
    assert client.body == b"".join(chunks)  # the app got the body as it was sent


async def test_the_app_behind_the_guard_reads_the_body_byte_for_byte() -> None:
    body = json.dumps({"é": ["a", {"b": None}]}, ensure_ascii=False).encode()
    client = _Client([body[:3], body[3:]])
    await _guard()(_scope(JSON), client.receive, client.send)
    assert (client.status, client.body) == (200, body)


@pytest.mark.parametrize(("headers", "body", "status", "code"), [
    ([(b"content-type", b"application/json"), (b"content-length", b"12x")], b"{}", 400,
     "invalid_content_length"),
    ([(b"content-type", b"text/plain"), (b"content-length", b"2")], b"{}", 415,
     "unsupported_media_type"),
    ([(b"content-length", b"2")], b"{}", 415, "unsupported_media_type"),
    ([(b"content-type", b"application/json"), (b"content-length", b"2000")], b"{}", 413,
     "body_too_large"),
    ([(b"content-type", b"application/vnd.x+json"), (b"content-length", b"40")],
     b"[" * 20 + b"]" * 20, 422, "too_deeply_nested"),
])
async def test_refusals_name_what_was_wrong(headers: Any, body: bytes, status: int,
                                            code: str) -> None:
    client = _Client([body])
    await _guard(max_bytes=1000, max_depth=8)(_scope(headers), client.receive, client.send)
    assert client.status == status
    assert json.loads(client.body)["error"]["code"] == code


async def test_a_request_without_a_body_passes_untouched() -> None:
    client = _Client([b""])
    await _guard()(_scope([(b"content-type", b"text/plain")]), client.receive, client.send)
    assert client.status == 200


def test_limits_must_be_positive() -> None:
    for field in ("max_bytes", "max_depth", "timeout", "min_rate"):
        with pytest.raises(ValueError, match=field):
            BodyLimits(**{field: 0})


# -- adapter records are bounded --------------------------------------------------------------


def _agui_run(thread: str, text: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    message = {"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}
    history.append(message)
    return {"threadId": thread, "runId": f"r-{uuid.uuid4().hex[:8]}",
            "messages": list(history), "protocolVersion": "1.0"}


async def test_an_agui_turn_whose_recorded_input_passes_the_bound_is_refused() -> None:
    """The thread is the checkpoint's lineage (issue 27): what bounds one turn's record is
    the input it commits with its first snapshot."""
    store = InMemorySessionStore()
    host = WorkflowHost(chat, session_store=store, max_record_bytes=20_000)
    app = create_app(host, adapters=[AGUIAdapter()])
    history: list[dict[str, Any]] = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://t") as client:
        for _ in range(3):  # turns of about 1 kB each are recorded
            response = await client.post("/agui", json=_agui_run("t-1", "x" * 1000, history))
            assert parse_sse(response.text)[-1]["type"] == "RUN_FINISHED"
        good = (await client.get("/v1/conversations/t-1")).json()["resume_token"]
        response = await client.post("/agui", json=_agui_run("t-1", "y" * 25_000, history))
        assert response.status_code == 409
        refused = response.json()["error"]
        assert refused["code"] == "record_too_large" and refused["limit"] == 20_000
        assert refused["size"] > 20_000
        # nothing of the refused turn ran: the conversation's head is the last good turn's
        native = (await client.get("/v1/conversations/t-1")).json()
        assert native["status"] == "idle" and native["resume_token"] == good
        assert len(await host.turns("t-1")) == 3


async def test_a_record_over_the_bound_is_refused_and_nothing_is_written() -> None:
    records = WorkflowHost(chat, max_record_bytes=100).records("ns")
    await records.put("k", {"small": 1}, create=True)
    before = await records.get("k")
    with pytest.raises(RecordTooLargeError) as raised:
        await records.put("k", {"big": "x" * 200}, expected_version=before.version)
    assert (raised.value.namespace, raised.value.key, raised.value.limit) == ("ns", "k", 100)
    after = await records.get("k")
    assert after is not None and after.value == {"small": 1}
