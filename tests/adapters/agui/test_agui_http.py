"""The AG-UI endpoint in-process (httpx over ASGI): the stream, interrupts, resume and errors.

Every resume-contract violation is sent as raw HTTP (the real client refuses to send them)
and must answer RUN_STARTED then RUN_ERROR with its own code, leave the conversation's head
where it was, and leave the same interrupts answerable.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from checkflow.adapters.agui import AGUIAdapter, default_adapter
from checkflow.agents import ScriptedAgent
from checkflow.errors import CorruptSessionError, StorageUnavailableError
from checkflow.hosting import AgentHost, WorkflowHost, create_app
from checkflow.sessions import AgentSession, InMemorySessionStore
from checkflow.storage import InMemoryCheckpointStorage
from checkflow.workflows import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from tests.e2e.agui_flows import approval, chat, two_requests
from tests.e2e.agui_wire import RESUME_VIOLATIONS, followed_states, parse_sse, untimed

# -- helpers ----------------------------------------------------------------------------------


def client_for(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.fixture
def host() -> WorkflowHost:
    return WorkflowHost(approval)


@pytest.fixture
async def client(host: WorkflowHost) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(create_app(host, adapters=[AGUIAdapter()])) as c:
        yield c


def user(text: str, id: str | None = None) -> dict[str, Any]:
    return {"id": id or f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}


def run_input(thread: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": f"run-{uuid.uuid4().hex[:8]}", "messages": messages,
            "protocolVersion": "1.0", **extra}


async def post(client: httpx.AsyncClient, body: Any) -> list[dict[str, Any]]:
    response = await client.post("/agui", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def interrupts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt", events[-1]
    return list(outcome["interrupts"])


def resume(*entries: tuple[str, Any], status: str = "resolved") -> list[dict[str, Any]]:
    return [{"interruptId": i, "status": status, "payload": p} for i, p in entries]


async def pause(client: httpx.AsyncClient, thread: str, text: str = "tea") -> list[dict[str, Any]]:
    return interrupts(await post(client, run_input(thread, [user(text)])))


# -- the stream -------------------------------------------------------------------------------


def test_default_adapter_is_agui_at_slash_agui() -> None:
    adapter = default_adapter()
    assert isinstance(adapter, AGUIAdapter) and adapter.path == "/agui"


async def test_a_run_opens_with_run_started_and_ends_with_one_run_finished(
    client: httpx.AsyncClient,
) -> None:
    body = run_input("t-1", [user("tea")])
    events = await post(client, body)
    assert untimed(events[0]) == {"type": "RUN_STARTED", "threadId": "t-1",
                                  "runId": body["runId"], "protocolVersion": "1.0"}
    assert types(events).count("RUN_FINISHED") == 1 and events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["threadId"] == "t-1" and events[-1]["runId"] == body["runId"]
    assert types(events)[-2] == "MESSAGES_SNAPSHOT"
    steps = [e["type"] for e in events if e["type"].startswith("STEP_")]
    assert steps == ["STEP_STARTED", "STEP_FINISHED"] * (len(steps) // 2) and steps


async def test_a_pause_has_one_interrupt_per_pending_request_with_schema_and_token(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    (interrupt,) = await pause(client, "t-1")
    state = await host.get_conversation("t-1")
    assert [interrupt["id"]] == list(state.pending_requests)
    assert interrupt["reason"] == "input_required"
    assert interrupt["message"] == "Publish this draft?"
    assert interrupt["responseSchema"] == {"type": "boolean"}
    meta = interrupt["metadata"]["checkflow"]
    assert meta["sourceExecutorId"] == "reviewer"
    assert meta["requestData"]["question"] == "Publish this draft?"
    assert meta["resumeToken"] == {"checkpointId": state.resume_token.checkpoint_id,
                                   "snapshotId": state.resume_token.snapshot_id}


async def test_resume_completes_the_paused_thread(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    (interrupt,) = await pause(client, "t-1")
    events = await post(client, run_input("t-1", [], resume=resume((interrupt["id"], True))))
    assert events[-1]["outcome"] == {"type": "success"}
    texts = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert texts == ["published: Five things about tea."]
    assert (await host.get_conversation("t-1")).pending_requests == {}


async def test_a_reconnect_with_no_messages_learns_the_open_interrupts(
    client: httpx.AsyncClient,
) -> None:
    (interrupt,) = await pause(client, "t-1")
    events = await post(client, run_input("t-1", []))
    assert types(events) == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT",
                             "RUN_FINISHED"]
    assert [i["id"] for i in interrupts(events)] == [interrupt["id"]]
    assert [m["content"] for m in events[2]["messages"]] == ["tea"]


async def test_two_interrupts_resumed_in_one_call_one_of_them_cancelled() -> None:
    host = WorkflowHost(two_requests)
    async with client_for(create_app(host, adapters=[AGUIAdapter()])) as client:
        opened = await pause(client, "t-2", "cake")
        assert len(opened) == 2
        assert {i["responseSchema"]["type"] for i in opened} == {"integer"}
        by_source = {i["metadata"]["checkflow"]["sourceExecutorId"]: i["id"] for i in opened}
        entries = [{"interruptId": by_source["left"], "status": "resolved", "payload": 3},
                   {"interruptId": by_source["right"], "status": "cancelled"}]
        events = await post(client, run_input("t-2", [], resume=entries))
    assert events[-1]["outcome"] == {"type": "success"}
    texts = sorted(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert texts == ["left: 3", "right: cancelled"]


async def test_a_non_text_output_is_a_custom_event() -> None:
    class Count(Executor):
        @handler
        async def count(self, text: str, ctx: WorkflowContext) -> None:
            await ctx.yield_output({"length": len(text)})

    workflow = WorkflowBuilder(start_executor=Count("count"), name="count").build()
    async with client_for(create_app(WorkflowHost(workflow), adapters=[AGUIAdapter()])) as c:
        events = await post(c, run_input("t", [user("four")]))
    (custom,) = [e for e in events if e["type"] == "CUSTOM"]
    assert custom["name"] == "checkflow:output"
    assert custom["value"] == {"executorId": "count", "data": {"length": 4}}


async def test_the_workflow_shared_state_is_the_state_snapshot() -> None:
    class Tally(Executor):
        @handler
        async def tally(self, text: str, ctx: WorkflowContext) -> None:
            ctx.set_state("words", len(text.split()))
            await ctx.yield_output("counted")

    workflow = WorkflowBuilder(start_executor=Tally("tally"), name="tally").build()
    async with client_for(create_app(WorkflowHost(workflow), adapters=[AGUIAdapter()])) as c:
        events = await post(c, run_input("t", [user("one two three")]))
    shown = [e["type"] for e in events if e["type"].startswith("STATE_")]
    assert shown[0] == "STATE_SNAPSHOT"  # the state as the turn took its input: {}
    assert followed_states(events) == [{}, {"words": 3}]
    assert types(events)[-2:] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]


async def test_an_agent_host_streams_its_reply_as_text() -> None:
    host = AgentHost(ScriptedAgent("bot", ["hello there"]))
    async with client_for(create_app(host, adapters=[AGUIAdapter()])) as client:
        events = await post(client, run_input("t-a", [user("hi")]))
    assert events[-1]["outcome"] == {"type": "success"}
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "hello there"
    assert types(events).count("TEXT_MESSAGE_START") == types(events).count("TEXT_MESSAGE_END")


async def test_an_agent_host_thread_is_its_turns_and_a_retry_replays_the_reply() -> None:
    host = AgentHost(ScriptedAgent("bot", ["hello there", "bye now", "never said"]))
    async with client_for(create_app(host, adapters=[AGUIAdapter()])) as client:
        first = await post(client, run_input("t-a", [user("hi", "u1")]))
        snapshot = next(e for e in first if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
        body = run_input("t-a", [*snapshot, user("again", "u2")])
        second = await post(client, body)
        retried = await post(client, body)
        reconnect = await post(client, run_input("t-a", []))
    shown = next(e for e in reconnect if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [(m["role"], m["content"]) for m in shown] == [
        ("user", "hi"), ("assistant", "hello there"), ("user", "again"), ("assistant", "bye now")]
    replayed = "".join(e["delta"] for e in retried if e["type"] == "TEXT_MESSAGE_CONTENT")
    # the agent did not run again
    assert replayed == "bye now" and untimed(retried[-1]) == untimed(second[-1])
    streamed = [e["messageId"] for e in second if e["type"] == "TEXT_MESSAGE_START"]
    assert streamed == [m["id"] for m in shown[3:]]  # the live ids are the transcript's


# -- input de-duplication ---------------------------------------------------------------------


async def test_the_whole_history_resent_is_not_fed_twice() -> None:
    host = WorkflowHost(chat)
    async with client_for(create_app(host, adapters=[AGUIAdapter()])) as client:
        first = user("one")
        events = await post(client, run_input("t-c", [first]))
        snapshot = next(e for e in events if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
        events = await post(client, run_input("t-c", [*snapshot, user("two")]))
    texts = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert texts == ["heard 1: two"]
    snapshot = next(e for e in events if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [m["content"] for m in snapshot] == ["one", "heard 1: one", "two", "heard 1: two"]


async def test_a_str_start_takes_the_latest_new_user_text(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    first = user("tea")
    (interrupt,) = await pause_with(client, "t-1", [first])
    await post(client, run_input("t-1", [first], resume=resume((interrupt["id"], False))))
    (again,) = await pause_with(client, "t-1", [first, user("coffee")])
    assert again["metadata"]["checkflow"]["requestData"]["draft"] == "Five things about coffee."


async def pause_with(
    client: httpx.AsyncClient, thread: str, messages: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    return interrupts(await post(client, run_input(thread, messages)))


async def test_a_resend_with_nothing_new_runs_nothing(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    first = user("tea")
    (interrupt,) = await pause_with(client, "t-1", [first])
    await post(client, run_input("t-1", [first], resume=resume((interrupt["id"], True))))
    before = await host.get_conversation("t-1")
    events = await post(client, run_input("t-1", [first]))
    assert types(events) == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT",
                             "RUN_FINISHED"]
    assert (await host.get_conversation("t-1")).resume_token == before.resume_token


# -- resume-contract violations ---------------------------------------------------------------


async def _assert_refused(
    host: WorkflowHost, client: httpx.AsyncClient, thread: str, body: dict[str, Any], code: str
) -> None:
    before = await host.get_conversation(thread)
    events = await post(client, body)
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"], events
    assert events[1]["code"] == code and events[1]["message"]
    after = await host.get_conversation(thread)
    assert after.resume_token == before.resume_token
    assert set(after.pending_requests) == set(before.pending_requests)


async def _assert_still_answerable(host: WorkflowHost, client: httpx.AsyncClient,
                                   thread: str) -> None:
    state = await host.get_conversation(thread)
    answers = [{"interruptId": i, "status": "resolved", "payload": 1}
               for i in state.pending_requests]
    events = await post(client, run_input(thread, [], resume=answers))
    assert events[-1]["outcome"] == {"type": "success"}, events[-1]


@pytest.fixture
async def two_host() -> WorkflowHost:
    return WorkflowHost(two_requests)


@pytest.fixture
async def two_client(two_host: WorkflowHost) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(create_app(two_host, adapters=[AGUIAdapter()])) as c:
        yield c


@pytest.mark.parametrize("code", list(RESUME_VIOLATIONS))
async def test_each_resume_violation_is_run_error_with_its_own_code(
    code: str, two_host: WorkflowHost, two_client: httpx.AsyncClient
) -> None:
    first, second = await pause(two_client, "t")
    body = {**run_input("t", []), **RESUME_VIOLATIONS[code](first["id"], second["id"])}
    await _assert_refused(two_host, two_client, "t", body, code)
    await _assert_still_answerable(two_host, two_client, "t")


async def test_a_resume_sent_again_is_already_resolved_and_never_reruns_the_handler(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    (interrupt,) = await pause(client, "t-1")
    body = run_input("t-1", [], resume=resume((interrupt["id"], True)))
    await post(client, body)
    done = await host.get_conversation("t-1")
    again = await post(client, {**body, "runId": "run-again"})
    assert types(again) == ["RUN_STARTED", "RUN_ERROR"]
    assert again[1]["code"] == "already_resolved"
    after = await host.get_conversation("t-1")
    assert after.resume_token == done.resume_token and after.outputs == done.outputs


async def test_a_resume_whose_run_fails_is_not_consumed() -> None:
    failures = [RuntimeError("the reviewer's pen ran dry")]

    class Ask(Executor):
        @handler
        async def ask(self, text: str, ctx: WorkflowContext) -> None:
            await ctx.request_info({"question": "ok?"}, response_type=bool)

        @response_handler
        async def answered(self, request: dict, ok: bool, ctx: WorkflowContext) -> None:
            if failures:
                raise failures.pop()
            await ctx.yield_output(f"answered {ok}")

    workflow: Workflow = WorkflowBuilder(start_executor=Ask("ask"), name="flaky").build()
    host = WorkflowHost(workflow)
    async with client_for(create_app(host, adapters=[AGUIAdapter()])) as client:
        (interrupt,) = await pause(client, "t-f")
        body = run_input("t-f", [], resume=resume((interrupt["id"], True)))
        failed = await post(client, body)
        assert failed[-1]["type"] == "RUN_ERROR" and failed[-1]["code"] == "workflow_failed"
        assert "pen ran dry" in failed[-1]["message"]
        assert list((await host.get_conversation("t-f")).pending_requests) == [interrupt["id"]]
        retried = await post(client, {**body, "runId": "run-retry"})
    assert retried[-1]["outcome"] == {"type": "success"}
    assert [e["delta"] for e in retried if e["type"] == "TEXT_MESSAGE_CONTENT"] == [
        "answered True"]


# -- branching --------------------------------------------------------------------------------


async def test_from_snapshot_branches_back_to_a_pause_and_answers_it_differently(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    (interrupt,) = await pause(client, "t-1")
    token = interrupt["metadata"]["checkflow"]["resumeToken"]
    await post(client, run_input("t-1", [], resume=resume((interrupt["id"], True))))
    props = {"checkflow": {"fromSnapshot": token["snapshotId"]}}
    events = await post(client, run_input("t-1", [], resume=resume((interrupt["id"], False)),
                                          forwardedProps=props))
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["dropped"]


async def test_a_stale_resume_token_is_stale_resume_token(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    (interrupt,) = await pause(client, "t-1")
    token = interrupt["metadata"]["checkflow"]["resumeToken"]
    stale = {"checkflow": {"resumeToken": {**token, "snapshotId": "not-the-head"}}}
    body = run_input("t-1", [], resume=resume((interrupt["id"], True)), forwardedProps=stale)
    await _assert_refused(host, client, "t-1", body, "stale_resume_token")
    fresh = {"checkflow": {"resumeToken": token}}
    events = await post(client, {**body, "forwardedProps": fresh})
    assert events[-1]["outcome"] == {"type": "success"}


# -- one conversation, any protocol -----------------------------------------------------------


async def test_a_thread_paused_over_agui_is_answered_over_the_native_api(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    (interrupt,) = await pause(client, "shared-1")
    view = (await client.get("/v1/conversations/shared-1")).json()
    assert [p["request_id"] for p in view["pending_requests"]] == [interrupt["id"]]
    answered = await client.post("/v1/conversations/shared-1/runs",
                                 json={"responses": {interrupt["id"]: True}})
    assert answered.status_code == 200 and answered.json()["status"] == "idle"
    again = await post(client, run_input("shared-1", [], resume=resume((interrupt["id"], True))))
    assert types(again) == ["RUN_STARTED", "RUN_ERROR"]
    assert again[1]["code"] == "already_resolved"


async def test_threads_are_scoped_by_principal() -> None:
    host = WorkflowHost(approval)

    def authenticate(request: Any) -> str | None:
        return str(request.headers.get("x-user", "")) or None

    app = create_app(host, adapters=[AGUIAdapter()], authenticate=authenticate)
    async with client_for(app) as client:
        alice = await client.post("/agui", json=run_input("same", [user("tea")]),
                                  headers={"x-user": "alice"})
        bob = await client.post("/agui", json=run_input("same", []), headers={"x-user": "bob"})
        nobody = await client.post("/agui", json=run_input("same", []))
    assert interrupts(parse_sse(alice.text))
    assert parse_sse(bob.text)[-1]["outcome"] == {"type": "success"}  # bob's thread is empty
    assert nobody.status_code == 401 and nobody.headers["content-type"].startswith(
        "application/json")


# -- errors before the stream opens -----------------------------------------------------------


async def test_malformed_json_is_400(client: httpx.AsyncClient) -> None:
    response = await client.post("/agui", content=b"{nope",
                                 headers={"content-type": "application/json"})
    assert response.status_code == 400 and response.json()


async def test_a_schema_violation_is_422_naming_the_field(client: httpx.AsyncClient) -> None:
    response = await client.post("/agui", json={"runId": "r", "messages": []})
    assert response.status_code == 422
    assert "threadId" in response.text or "thread_id" in response.text


async def test_a_bad_forwarded_checkflow_option_is_422_naming_it(
    client: httpx.AsyncClient,
) -> None:
    body = run_input("t", [user("x")], forwardedProps={"checkflow": {"fromSnapshot": 7}})
    response = await client.post("/agui", json=body)
    assert response.status_code == 422 and "fromSnapshot" in response.text


async def test_a_wrong_media_type_is_415(client: httpx.AsyncClient) -> None:
    response = await client.post("/agui", content=b"threadId=t",
                                 headers={"content-type": "text/plain"})
    assert response.status_code == 415


async def test_a_busy_thread_is_409_at_once() -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    class Slow(Executor):
        @handler
        async def slow(self, text: str, ctx: WorkflowContext) -> None:
            entered.set()
            await asyncio.wait_for(release.wait(), 10)
            await ctx.yield_output(text)

    host = WorkflowHost(WorkflowBuilder(start_executor=Slow("slow"), name="slow").build())
    async with client_for(create_app(host, adapters=[AGUIAdapter()])) as client:
        first = asyncio.create_task(client.post("/agui", json=run_input("b", [user("one")])))
        await asyncio.wait_for(entered.wait(), 10)
        second = await client.post("/agui", json=run_input("b", [user("two")]))
        release.set()
        done = await asyncio.wait_for(first, 10)
    assert second.status_code == 409 and second.headers["content-type"].startswith(
        "application/json")
    assert parse_sse(done.text)[-1]["outcome"] == {"type": "success"}


async def test_a_long_superstep_gets_keep_alive_comments_and_the_run_still_finishes() -> None:
    pinged = asyncio.Event()

    class Waits(Executor):
        @handler
        async def wait(self, text: str, ctx: WorkflowContext) -> None:
            await asyncio.wait_for(pinged.wait(), 10)  # released by the first ping sent
            await ctx.yield_output(text)

    host = WorkflowHost(WorkflowBuilder(start_executor=Waits("waits"), name="waits").build())
    app = create_app(host, adapters=[AGUIAdapter(ping_interval=0.01)])

    async def watching(scope: Any, receive: Any, send: Any) -> None:
        async def watched_send(message: Any) -> None:
            if message.get("type") == "http.response.body" and b": ping" in message.get(
                    "body", b""):
                pinged.set()
            await send(message)

        await app(scope, receive, watched_send)

    async with client_for(watching) as client:
        response = await client.post("/agui", json=run_input("p", [user("late")]))
    assert ": ping" in response.text
    events = parse_sse(response.text)
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["outcome"] == {"type": "success"}


@pytest.mark.parametrize("path", ["agui", "/", ""])
def test_the_path_must_be_absolute_and_not_the_root(path: str) -> None:
    with pytest.raises(ValueError, match="path"):
        AGUIAdapter(path=path)


async def test_the_path_is_configurable() -> None:
    app = create_app(WorkflowHost(chat), adapters=[AGUIAdapter(path="/chat/agui")])
    async with client_for(app) as client:
        response = await client.post("/chat/agui", json=run_input("t", [user("hi")]))
        missing = await client.post("/agui", json=run_input("t", [user("hi")]))
    assert parse_sse(response.text)[-1]["outcome"] == {"type": "success"}
    assert missing.status_code == 404


class _NoRecords(InMemorySessionStore):
    """A real in-memory store that refuses any adapter record (the conversation's own
    sessions are written as usual), so a run that wrote one would fail."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[str] = []

    async def set(self, session: AgentSession, **kwargs: Any) -> str:
        self.written.append(session.session_id)
        if session.session_id.startswith("record-"):
            raise CorruptSessionError(f"no record may be written ({session.session_id!r})")
        return await super().set(session, **kwargs)


async def test_no_adapter_record_is_written_and_the_transcript_is_the_lineage() -> None:
    store, snapshots = _NoRecords(), InMemoryCheckpointStorage()
    host = WorkflowHost(chat, session_store=store, checkpoint_storage=snapshots)
    async with client_for(create_app(host, adapters=[AGUIAdapter()])) as client:
        first = await post(client, run_input("t", [user("one", "u1")]))
        assert first[-1]["outcome"] == {"type": "success"}, first[-1]
        # another process on the same stores
        other = WorkflowHost(chat, session_store=store, checkpoint_storage=snapshots)
        async with client_for(create_app(other, adapters=[AGUIAdapter()])) as elsewhere:
            events = await post(elsewhere, run_input("t", []))
    assert not [s for s in store.written if s.startswith("record-")]
    snapshot = next(e for e in events if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    streamed = next(e for e in first if e["type"] == "TEXT_MESSAGE_START")["messageId"]
    assert [(m["id"], m["content"]) for m in snapshot] == [
        ("u1", "one"), (streamed, "heard 1: one")]


async def test_a_retry_with_the_same_run_id_replays_and_other_input_is_run_id_reused(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    (interrupt,) = await pause(client, "t-r")
    body = run_input("t-r", [], resume=resume((interrupt["id"], True)))
    done = await post(client, body)
    again = await post(client, body)
    assert untimed(again[-1]) == untimed(done[-1]) and again[-1]["outcome"] == {"type": "success"}
    texts = [e["delta"] for e in again if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert texts == ["published: Five things about tea."]
    assert (await host.get_conversation("t-r")).outputs == ["published: Five things about tea."]
    reused = await post(client, {**body, "messages": [user("more")]})
    assert types(reused) == ["RUN_STARTED", "RUN_ERROR"]
    assert reused[1]["code"] == "run_id_reused"


# -- failures after the stream opens ----------------------------------------------------------


async def test_a_workflow_error_is_run_error_and_the_thread_then_runs_normally(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    failed = await post(client, run_input("t-e", [user("fail:tea")]))
    assert types(failed)[0] == "RUN_STARTED" and failed[-1]["type"] == "RUN_ERROR"
    assert failed[-1]["code"] == "workflow_failed"
    assert "the writer refused" in failed[-1]["message"]
    assert "RUN_FINISHED" not in types(failed)
    again = await pause(client, "t-e", "coffee")
    assert again[0]["metadata"]["checkflow"]["requestData"]["draft"] == (
        "Five things about coffee.")


async def test_a_reconnect_after_a_failed_turn_is_turn_failed_with_the_lineage(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    first = user("tea", "u1")
    (interrupt,) = await pause_with(client, "t-f", [first])
    await post(client, run_input("t-f", [first], resume=resume((interrupt["id"], False))))
    failed = await post(client, run_input("t-f", [first, user("fail:coffee", "u2")]))
    assert failed[-1]["code"] == "workflow_failed"
    reconnect = await post(client, run_input("t-f", []))
    assert types(reconnect) == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT",
                                "RUN_ERROR"]
    assert reconnect[-1]["code"] == "turn_failed" and "failed" in reconnect[-1]["message"]
    assert [m["content"] for m in reconnect[2]["messages"]] == ["tea", "dropped"]
    again = await post(client, run_input("t-f", [first, user("fail:coffee", "u2")]))
    assert again[-1]["code"] == "workflow_failed"  # the failed message is not seen: it ran again
    (asked,) = await pause_with(client, "t-f", [first, user("tea", "u3")])
    assert asked["metadata"]["checkflow"]["requestData"]["draft"] == "Five things about tea."


async def test_a_reconnect_to_a_thread_that_never_ran_is_an_empty_success(
    client: httpx.AsyncClient,
) -> None:
    events = await post(client, run_input("t-none", []))
    assert types(events) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert events[1]["messages"] == [] and events[-1]["outcome"] == {"type": "success"}


class _LoadsFailAfter(InMemoryCheckpointStorage):
    """A real in-memory storage whose loads fail once ``fail_after`` more have succeeded."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_after: int | None = None

    async def load(self, checkpoint_id: str) -> Any:
        if self.fail_after is not None:
            if self.fail_after <= 0:
                raise StorageUnavailableError(f"the disk holding {checkpoint_id!r} went away")
            self.fail_after -= 1
        return await super().load(checkpoint_id)


async def test_a_store_that_fails_after_the_stream_opened_ends_it_with_run_error() -> None:
    storage = _LoadsFailAfter()
    host = WorkflowHost(chat, checkpoint_storage=storage)
    async with client_for(create_app(host, adapters=[AGUIAdapter()])) as client:
        await post(client, run_input("t", [user("one")]))
        storage.fail_after = 1  # the thread's lineage reads; the reconnect's next read fails
        events = await post(client, run_input("t", []))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"], events
    assert "went away" in events[-1]["message"]


async def test_a_turn_whose_new_messages_pass_the_record_bound_is_refused_before_it_runs(
) -> None:
    host = WorkflowHost(chat, max_record_bytes=2_000)
    async with client_for(create_app(host, adapters=[AGUIAdapter()])) as client:
        ok = await post(client, run_input("t-b", [user("small", "u1")]))
        before = await host.get_conversation("t-b")
        response = await client.post("/agui", json=run_input("t-b", [user("x" * 3_000)]))
    assert response.status_code == 409, response.text
    refused = response.json()["error"]
    assert refused["code"] == "record_too_large" and refused["limit"] == 2_000
    assert ok[-1]["outcome"] == {"type": "success"}
    assert (await host.get_conversation("t-b")).resume_token == before.resume_token
