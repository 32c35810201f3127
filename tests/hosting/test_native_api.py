"""The native HTTP API in-process (httpx over ASGI): shapes, every error status, SSE, auth."""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest
from hosting_flows import Gate, build

from checkflow.checkpoints import CheckpointReference, EncodedPart
from checkflow.hosting import WorkflowHost, create_app
from checkflow.hosting._keys import ConversationKey

JSON = {"content-type": "application/json"}


def client_for(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.fixture
async def client(host: WorkflowHost) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(create_app(host, max_body_bytes=4096)) as c:
        yield c


async def run(client: httpx.AsyncClient, conversation: str, body: Any, **kw: Any) -> httpx.Response:
    return await client.post(f"/v1/conversations/{conversation}/runs", json=body, **kw)


async def test_a_run_body_has_the_fixed_field_names(client: httpx.AsyncClient) -> None:
    response = await run(client, "c-1", {"message": "ask"})
    assert response.status_code == 200
    body = response.json()
    assert list(body) == [
        "conversation_id",
        "status",
        "outputs",
        "pending_requests",
        "resume_token",
    ]
    assert body["status"] == "awaiting_responses"
    (request,) = body["pending_requests"]
    assert list(request) == ["request_id", "data", "response_schema", "source_executor_id"]
    assert request["response_schema"] == {"type": "boolean"}
    assert request["source_executor_id"] == "finish"
    assert set(body["resume_token"]) == {"checkpoint_id", "snapshot_id"}


async def test_answering_over_http_completes_the_conversation(client: httpx.AsyncClient) -> None:
    paused = (await run(client, "c-1", {"message": "ask"})).json()
    request_id = paused["pending_requests"][0]["request_id"]
    done = await run(
        client, "c-1", {"responses": {request_id: True}, "resume_token": paused["resume_token"]}
    )
    assert done.json()["status"] == "idle"
    assert done.json()["outputs"] == ["approved"]
    conversation = (await client.get("/v1/conversations/c-1")).json()
    assert conversation["outputs"] == ["approved"]
    assert conversation["resume_token"] == done.json()["resume_token"]


@pytest.mark.parametrize("weird", ["a/b ../c?d#é", "x/snapshots", "x/runs", "%2F", " "])
async def test_a_conversation_id_may_be_any_string(client: httpx.AsyncClient, weird: str) -> None:
    path = "/v1/conversations/" + urllib.parse.quote(weird, safe="")
    response = await client.post(path + "/runs", json={"message": "hi"})
    assert response.status_code == 200
    assert response.json()["conversation_id"] == weird
    assert (await client.get(path)).json()["outputs"] == ["HI"]
    snapshots = (await client.get(path + "/snapshots")).json()["snapshots"]
    assert len(snapshots) == 4


async def test_a_failed_workflow_answers_200_with_an_error_object(
    client: httpx.AsyncClient,
) -> None:
    response = await run(client, "c-1", {"message": "boom"})
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "failed"
    assert body["error"]["code"] == "workflow_failed"
    assert "exploded" in body["error"]["message"]
    assert (await run(client, "c-1", {"message": "ok"})).json()["outputs"] == ["OK"]


async def test_a_workflow_that_never_converges_answers_200_failed_naming_why() -> None:
    from hosting_flows import Shout

    from checkflow.workflows import WorkflowBuilder

    loop = Shout("loop")
    workflow = WorkflowBuilder(start_executor=loop, max_iterations=3).add_edge(loop, loop).build()
    async with client_for(create_app(WorkflowHost(workflow))) as client:
        response = await run(client, "c-1", {"message": "again"})
    assert response.status_code == 200
    assert response.json()["status"] == "failed"
    assert response.json()["error"]["code"] == "workflow_did_not_converge"


async def test_malformed_json_is_400(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/conversations/c/runs", content=b'{"message": ', headers=JSON)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"


async def test_a_schema_violation_is_422_naming_the_field(client: httpx.AsyncClient) -> None:
    response = await run(client, "c", {"message": "x", "resume_token": {"checkpoint_id": 1}})
    assert response.status_code == 422
    assert "resume_token.checkpoint_id" in response.json()["error"]["message"]


async def test_an_unknown_field_is_422_naming_it(client: httpx.AsyncClient) -> None:
    response = await run(client, "c", {"mesage": "x"})
    assert response.status_code == 422
    assert "mesage" in response.json()["error"]["message"]


async def test_message_and_responses_together_are_422(client: httpx.AsyncClient) -> None:
    response = await run(client, "c", {"message": "x", "responses": {"r": True}})
    assert response.status_code == 422


async def test_a_message_no_handler_accepts_is_422_listing_the_types(
    client: httpx.AsyncClient,
) -> None:
    response = await run(client, "c", {"message": 42})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_message"
    assert error["accepted_types"] == ["hosting_flows.Order", "str"]


async def test_a_wrong_response_type_is_422_naming_the_request(client: httpx.AsyncClient) -> None:
    paused = (await run(client, "c", {"message": "ask"})).json()
    request_id = paused["pending_requests"][0]["request_id"]
    response = await run(client, "c", {"responses": {request_id: "yes please"}})
    assert response.status_code == 422
    assert response.json()["error"]["request_id"] == request_id


async def test_an_answer_to_an_unknown_request_is_422_and_keeps_the_pause(
    client: httpx.AsyncClient,
) -> None:
    paused = (await run(client, "c", {"message": "ask"})).json()
    response = await run(client, "c", {"responses": {"no-such-request": True}})
    assert response.status_code == 422
    assert response.json()["error"]["request_id"] == "no-such-request"
    state = (await client.get("/v1/conversations/c")).json()
    assert state["pending_requests"] == paused["pending_requests"]
    assert state["resume_token"] == paused["resume_token"]


async def test_an_unknown_conversation_is_404(client: httpx.AsyncClient) -> None:
    for method, path in [
        ("GET", "/v1/conversations/none"),
        ("GET", "/v1/conversations/none/snapshots"),
        ("DELETE", "/v1/conversations/none"),
    ]:
        response = await client.request(method, path)
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == "conversation_not_found"


async def test_an_unknown_snapshot_is_404(client: httpx.AsyncClient) -> None:
    await run(client, "c", {"message": "x"})
    response = await client.get("/v1/conversations/c/snapshots/nope")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "snapshot_not_found"
    branch = await run(client, "c", {"message": "y", "from_snapshot": "nope"})
    assert branch.status_code == 404


async def test_a_stale_resume_token_is_409(client: httpx.AsyncClient) -> None:
    first = (await run(client, "c", {"message": "one"})).json()
    await run(client, "c", {"message": "two"})
    response = await run(client, "c", {"message": "three", "resume_token": first["resume_token"]})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "stale_resume_token"


async def test_a_refused_first_run_leaves_no_session_and_the_conversation_unknown(
    client: httpx.AsyncClient, host: WorkflowHost
) -> None:
    stale = {"checkpoint_id": "cp", "snapshot_id": "s"}
    refused = await run(client, "fresh", {"message": "one", "resume_token": stale})
    assert refused.status_code == 409
    response = await client.get("/v1/conversations/fresh")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "conversation_not_found"
    assert await host.session_store.get(ConversationKey(None, "fresh").session_id) is None


async def test_a_busy_conversation_is_409_with_retry_after(workflow: Any, gate: Gate) -> None:
    host = WorkflowHost(workflow)
    async with client_for(create_app(host)) as client:
        first = asyncio.create_task(run(client, "c", {"message": "hold"}))
        await asyncio.wait_for(gate.entered.wait(), 10)
        response = await run(client, "c", {"message": "again"})
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "conversation_busy"
        assert int(response.headers["retry-after"]) >= 1
        gate.release.set()
        assert (await first).status_code == 200


async def test_a_graph_signature_mismatch_is_409_with_both_hashes(host: WorkflowHost) -> None:
    changed = WorkflowHost(
        build(audited=True),
        session_store=host.session_store,
        checkpoint_storage=host.checkpoint_storage,
    )
    async with client_for(create_app(host)) as old, client_for(create_app(changed)) as new:
        await run(old, "c", {"message": "one"})
        response = await run(new, "c", {"message": "two"})
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "graph_signature_mismatch"
    assert error["expected_graph_signature_hash"] == (await changed.workflow()).graph_signature_hash
    assert error["actual_graph_signature_hash"] == (await host.workflow()).graph_signature_hash


async def test_a_body_over_the_limit_is_413(client: httpx.AsyncClient) -> None:
    response = await run(client, "c", {"message": "x" * 5000})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"


async def test_a_chunked_body_over_the_limit_is_413(client: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"message": "'
        for _ in range(100):
            yield b"x" * 100
        yield b'"}'

    response = await client.post("/v1/conversations/c/runs", content=chunks(), headers=JSON)
    assert response.status_code == 413


async def test_a_wrong_media_type_is_415(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/conversations/c/runs",
        content=b'{"message": "x"}',
        headers={"content-type": "text/plain"},
    )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


async def test_the_snapshot_list_marks_the_head(client: httpx.AsyncClient) -> None:
    done = (await run(client, "c", {"message": "x"})).json()
    snapshots = (await client.get("/v1/conversations/c/snapshots")).json()["snapshots"]
    assert len(snapshots) == 4  # entry + three supersteps
    assert list(snapshots[0]) == [
        "snapshot_id",
        "parent_snapshot_id",
        "timestamp",
        "metadata",
        "is_head",
    ]
    heads = [s["snapshot_id"] for s in snapshots if s["is_head"]]
    assert heads == [done["resume_token"]["snapshot_id"]]
    assert snapshots[0]["metadata"]["boundary"] == "input_accepted"


async def test_a_snapshot_shows_its_decoded_state(client: httpx.AsyncClient) -> None:
    done = (await run(client, "c", {"message": "x"})).json()
    head = done["resume_token"]["snapshot_id"]
    detail = (await client.get(f"/v1/conversations/c/snapshots/{head}")).json()
    assert detail["is_head"] is True
    assert detail["state"]["messages"]["output"] == ["X"]
    assert detail["state"]["executor_states"]["shout"] == {"seen": 1}


async def test_state_of_a_type_this_server_never_registered_is_shown_opaque(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    """As if another deployment, with a type this one lacks, committed the conversation's head."""
    done = (await run(client, "c", {"message": "x"})).json()
    checkpoint, token = await host.get_checkpoint("c")
    head = checkpoint.get_snapshot(token.snapshot_id)
    state = head.state
    state["executor_states"]["shout"] = EncodedPart(
        b'{"$type":"elsewhere.Note","$value":{"text":"hi"}}', "json")
    foreign = await checkpoint.commit_snapshot(state=state, metadata=head.metadata)
    session = await host.session_store.get(ConversationKey(None, "c").session_id)
    assert session is not None
    session.state["checkpoint"] = CheckpointReference(checkpoint.checkpoint_id,
                                                      foreign.snapshot_id)
    await host.session_store.set(session, expected_version=session.version)

    detail = await client.get(f"/v1/conversations/c/snapshots/{foreign.snapshot_id}")
    assert detail.status_code == 200
    assert detail.json()["state"]["executor_states"]["shout"] == {
        "$opaque": "elsewhere.Note", "value": {"text": "hi"}}
    assert (await client.get("/v1/conversations/c/snapshots")).status_code == 200
    conversation = (await client.get("/v1/conversations/c")).json()
    assert conversation["outputs"] == done["outputs"]
    assert conversation["resume_token"]["snapshot_id"] == foreign.snapshot_id


async def test_delete_is_204_and_the_conversation_is_gone(client: httpx.AsyncClient) -> None:
    await run(client, "c", {"message": "x"})
    assert (await client.delete("/v1/conversations/c")).status_code == 204
    assert (await client.get("/v1/conversations/c")).status_code == 404


async def test_an_unknown_route_is_a_json_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/v2/nothing")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).json() == {"status": "ready"}


async def test_readiness_fails_when_the_storage_is_unreachable(tmp_path: Any) -> None:
    from checkflow.sessions import FileSessionStore

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the session folder should be")
    host = WorkflowHost(build(), session_store=FileSessionStore(blocker / "sessions"))
    async with client_for(create_app(host)) as client:
        response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "not_ready"


async def test_a_streamed_run_ends_with_the_run_body(client: httpx.AsyncClient) -> None:
    async with client.stream(
        "POST", "/v1/conversations/c/runs?stream=true", json={"message": "hi"}
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join([chunk async for chunk in response.aiter_text()])
    frames = [f for f in text.split("\n\n") if f]
    names = [f.split("\n")[0].removeprefix("event: ") for f in frames]
    assert names[0] == "WorkflowStartedEvent"
    assert names[-1] == "result"
    last = msgspec.json.decode(frames[-1].split("\n")[1].removeprefix("data: "))
    assert last["outputs"] == ["HI"]
    assert "OutputEvent" in names


def authenticate(request: Any) -> str | None:
    token = request.headers.get("authorization", "")
    return token.removeprefix("Bearer ") or None


async def test_without_a_principal_the_api_is_401_but_health_is_open(host: WorkflowHost) -> None:
    async with client_for(create_app(host, authenticate=authenticate)) as client:
        assert (await run(client, "c", {"message": "x"})).status_code == 401
        assert (await client.get("/healthz")).status_code == 200


async def test_a_principal_cannot_reach_another_principals_conversation(
    host: WorkflowHost,
) -> None:
    alice, mallory = {"authorization": "Bearer alice"}, {"authorization": "Bearer mallory"}
    async with client_for(create_app(host, authenticate=authenticate)) as client:
        first = (await run(client, "c", {"message": "secret"}, headers=alice)).json()
        head = first["resume_token"]["snapshot_id"]
        for method, path in [
            ("GET", "/v1/conversations/c"),
            ("GET", "/v1/conversations/c/snapshots"),
            ("GET", f"/v1/conversations/c/snapshots/{head}"),
            ("DELETE", "/v1/conversations/c"),
        ]:
            response = await client.request(method, path, headers=mallory)
            assert response.status_code == 404, path
        branch = await run(client, "c", {"message": "x", "from_snapshot": head}, headers=mallory)
        assert branch.status_code == 404
        mine = (await client.get("/v1/conversations/c", headers=alice)).json()
        assert mine["outputs"] == ["SECRET"]


async def test_an_async_authenticate_hook_is_awaited(host: WorkflowHost) -> None:
    async def auth(request: Any) -> str | None:
        return "someone"

    async with client_for(create_app(host, authenticate=auth)) as client:
        assert (await run(client, "c", {"message": "x"})).status_code == 200


class EchoAdapter:
    """A minimal protocol adapter: one route that reports the principal and runs the host."""

    def routes(self, host: WorkflowHost) -> list[Any]:
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        from checkflow.hosting import request_principal

        async def echo(request: Request) -> JSONResponse:
            principal = request_principal(request)
            result = await host.run("echo", message="adapted", principal=principal)
            return JSONResponse({"principal": principal, "outputs": result.outputs})

        return [Route("/echo", echo, methods=["POST"])]


async def test_adapters_are_mounted_beside_the_native_api(host: WorkflowHost) -> None:
    from checkflow.hosting import Adapter

    adapter = EchoAdapter()
    assert isinstance(adapter, Adapter)
    app = create_app(host, adapters=[adapter], authenticate=authenticate)
    async with client_for(app) as client:
        response = await client.post("/echo", headers={"authorization": "Bearer ann"})
        assert response.json() == {"principal": "ann", "outputs": ["ADAPTED"]}
        assert (await client.post("/echo")).status_code == 401
        native = await client.get("/v1/conversations/echo",
                                  headers={"authorization": "Bearer ann"})
        assert native.json()["outputs"] == ["ADAPTED"]


async def test_a_conversation_whose_good_head_was_pruned_is_treated_as_fresh(
    host: WorkflowHost, client: httpx.AsyncClient
) -> None:
    first = (await run(client, "c", {"message": "one"})).json()
    good = (await run(client, "c", {"message": "two"})).json()
    failed = await run(client, "c", {"message": "boom",
                                     "from_snapshot": first["resume_token"]["snapshot_id"]})
    assert failed.json()["resume_token"] == good["resume_token"]  # the good head is kept
    # The failed branch is now the checkpoint's head: pruning to it removes the good head.
    checkpoint_id = good["resume_token"]["checkpoint_id"]
    removed = await host.checkpoint_storage.prune(checkpoint_id, keep=[])
    assert good["resume_token"]["snapshot_id"] in removed
    gone = await client.get("/v1/conversations/c")
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "conversation_not_found"
    fresh = await run(client, "c", {"message": "again"})
    assert fresh.status_code == 200
    assert fresh.json()["outputs"] == ["AGAIN"]
    state = await client.get("/v1/conversations/c")
    assert state.status_code == 200
    assert state.json()["outputs"] == ["AGAIN"]
