"""The native API's document and lists: ``/openapi.json`` (validated, and real answers fit it),
paged conversations and snapshots, 405 for a wrong method, and ``GET .../events?after=N``."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import jsonschema
import msgspec
import pytest
from hosting_flows import Gate
from openapi_spec_validator import validate
from served import served

from checkflow.agents import ScriptedAgent
from checkflow.hosting import AgentHost, WorkflowHost, create_app


def client_for(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def fits(document: dict[str, Any], name: str, body: Any) -> None:
    """``body`` validates against the document's component ``name``."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    jsonschema.Draft202012Validator(schema).validate(body)


async def test_the_openapi_document_is_valid_and_real_answers_fit_it(
    host: WorkflowHost,
) -> None:
    async with client_for(create_app(host)) as client:
        document = (await client.get("/openapi.json")).json()
        validate(document)  # OpenAPI 3.1, by openapi-spec-validator
        assert document["openapi"] == "3.1.0"
        assert {"/healthz", "/readyz", "/v1/conversations", "/v1/conversations/{id}",
                "/v1/conversations/{id}/runs", "/v1/conversations/{id}/cancel",
                "/v1/conversations/{id}/events", "/v1/conversations/{id}/snapshots",
                "/v1/conversations/{id}/snapshots/{snapshot_id}"} <= set(document["paths"])
        paused = (await client.post("/v1/conversations/c1/runs",
                                    json={"message": "ASK it"})).json()
        fits(document, "ConversationView", paused)
        fits(document, "ConversationView", (await client.get("/v1/conversations/c1")).json())
        page = (await client.get("/v1/conversations/c1/snapshots")).json()
        fits(document, "SnapshotPage", page)
        snapshot_id = page["snapshots"][0]["snapshot_id"]
        fits(document, "SnapshotDetail",
             (await client.get(f"/v1/conversations/c1/snapshots/{snapshot_id}")).json())
        fits(document, "ConversationPage", (await client.get("/v1/conversations")).json())
        fits(document, "CancelView",
             (await client.post("/v1/conversations/c1/cancel")).json())
        fits(document, "ErrorBody", (await client.get("/v1/conversations/nope")).json())
        fits(document, "Status", (await client.get("/healthz")).json())
        with pytest.raises(jsonschema.ValidationError):  # the check can fail
            fits(document, "ConversationView", {"conversation_id": "c1"})


async def test_an_agent_hosts_document_describes_its_own_run_body() -> None:
    host = AgentHost(ScriptedAgent("greeter", ["hello"]))
    async with client_for(create_app(host)) as client:
        document = (await client.get("/openapi.json")).json()
        validate(document)
        run = document["paths"]["/v1/conversations/{id}/runs"]["post"]
        assert run["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
            "/AgentRunRequest")
        assert "/v1/conversations/{id}/snapshots" not in document["paths"]
        assert "greeter" in document["info"]["title"]
        reply = (await client.post("/v1/conversations/a/runs", json={"message": "hi"})).json()
        fits(document, "AgentReply", reply)


async def test_conversations_are_listed_newest_first_in_pages(host: WorkflowHost) -> None:
    async with client_for(create_app(host)) as client:
        for name in ("first", "second", "third"):
            assert (await client.post(f"/v1/conversations/{name}/runs",
                                      json={"message": "ASK x"})).status_code == 200
        await client.post("/v1/conversations/first/runs", json={"message": "again"})
        seen, cursor, pages = [], None, 0
        while pages < 10:  # bounded
            pages += 1
            params = {"limit": "2", **({"cursor": cursor} if cursor else {})}
            page = (await client.get("/v1/conversations", params=params)).json()
            seen += page["conversations"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == 2
        assert [c["conversation_id"] for c in seen] == ["first", "third", "second"]
        assert seen[0]["status"] == "awaiting_responses" and seen[0]["head_snapshot_id"]
        other = (await client.get("/v1/conversations",
                                  headers={"authorization": "x"})).json()
        assert len(other["conversations"]) == 3  # no authenticate: one anonymous principal


async def test_each_principal_lists_only_its_own_conversations(host: WorkflowHost) -> None:
    def who(request: Any) -> str | None:
        return request.headers.get("authorization") or None

    async with client_for(create_app(host, authenticate=who)) as client:
        await client.post("/v1/conversations/a/runs", json={"message": "x"},
                          headers={"authorization": "alice"})
        await client.post("/v1/conversations/b/runs", json={"message": "x"},
                          headers={"authorization": "bob"})
        listed = (await client.get("/v1/conversations", headers={"authorization": "bob"})).json()
        assert [c["conversation_id"] for c in listed["conversations"]] == ["b"]


async def test_snapshots_are_paged_oldest_first(host: WorkflowHost) -> None:
    async with client_for(create_app(host)) as client:
        await client.post("/v1/conversations/c/runs", json={"message": "one"})
        everything = (await client.get("/v1/conversations/c/snapshots",
                                       params={"limit": "1000"})).json()
        assert everything["next_cursor"] is None
        ids = [s["snapshot_id"] for s in everything["snapshots"]]
        assert len(ids) >= 3
        first = (await client.get("/v1/conversations/c/snapshots", params={"limit": "2"})).json()
        rest = (await client.get("/v1/conversations/c/snapshots",
                                 params={"limit": "1000", "cursor": first["next_cursor"]})).json()
        assert [s["snapshot_id"] for s in first["snapshots"] + rest["snapshots"]] == ids


@pytest.mark.parametrize("query", [{"limit": "0"}, {"limit": "1001"}, {"limit": "ten"},
                                   {"cursor": "!!not-ours"}, {"cursor": "ImFiYyI"}])
async def test_a_bad_page_request_is_400_naming_the_parameter(
    query: dict[str, str], host: WorkflowHost
) -> None:
    async with client_for(create_app(host)) as client:
        await client.post("/v1/conversations/c/runs", json={"message": "one"})
        for path in ("/v1/conversations", "/v1/conversations/c/snapshots"):
            response = await client.get(path, params=query)
            assert response.status_code == 400, (path, query)
            code = response.json()["error"]["code"]
            assert code == ("invalid_limit" if "limit" in query else "invalid_cursor")


async def test_a_wrong_method_on_a_known_route_is_405(host: WorkflowHost) -> None:
    async with client_for(create_app(host)) as client:
        await client.post("/v1/conversations/e1/runs", json={"message": "one"})
        for method, path in [("GET", "/v1/conversations/e1/runs"),
                             ("PUT", "/v1/conversations/e1"),
                             ("POST", "/v1/conversations/e1/snapshots"),
                             ("DELETE", "/v1/conversations")]:
            response = await client.request(method, path)
            assert response.status_code == 405, (method, path)
            assert response.json()["error"]["code"] == "method_not_allowed"
        slashed = await client.post("/v1/conversations/e1%2Fruns/runs", json={"message": "x"})
        assert slashed.json()["conversation_id"] == "e1/runs"  # an id's own slash is encoded


def frames(text: str) -> list[tuple[str, int | None, dict[str, Any]]]:
    found = []
    for frame in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
        if "data" in fields:
            found.append((fields.get("event", ""), int(fields["id"]) if "id" in fields else None,
                          msgspec.json.decode(fields["data"])))
    return found


async def test_events_after_n_replays_the_running_turn_then_follows_it(
    gate: Gate, host: WorkflowHost
) -> None:
    async with served(create_app(host)) as (url, _server), \
            httpx.AsyncClient(base_url=url, timeout=30) as client:
        running = asyncio.ensure_future(
            client.post("/v1/conversations/c/runs", json={"message": "hold"}))
        await asyncio.wait_for(gate.entered.wait(), 10)
        async with client.stream("GET", "/v1/conversations/c/events",
                                 params={"after": "1"}) as response:
            assert response.status_code == 200
            text = ""
            async for chunk in response.aiter_text():
                text += chunk
                if "\n\n" in text and not gate.release.is_set():
                    gate.release.set()  # a replayed event arrived: let the turn finish
        assert (await asyncio.wait_for(running, 10)).json()["outputs"] == ["HOLD"]
    events = frames(text)
    ids = [i for _, i, _ in events]
    assert ids == sorted(ids) and ids[0] == 2  # after=1: from sequence 2 on, in order
    assert next(d for name, _, d in events if name == "OutputEvent")["data"] == "HOLD"
    async with client_for(create_app(host)) as client:  # no turn running: empty at once
        idle = await client.get("/v1/conversations/c/events")
        assert idle.status_code == 200 and frames(idle.text) == []
        bad = await client.get("/v1/conversations/c/events", params={"after": "x"})
        assert bad.status_code == 400


async def test_an_agent_host_streams_answers_its_history_and_takes_chat_messages() -> None:
    host = AgentHost(ScriptedAgent("greeter", ["hello", "again"]))
    async with client_for(create_app(host)) as client:
        document = (await client.get("/openapi.json")).json()
        async with client.stream("POST", "/v1/conversations/a/runs?stream=true",
                                 json={"message": "hi"}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            text = "".join([chunk async for chunk in response.aiter_text()])
        names = [name for name, _, _ in frames(text)]
        assert "AgentRunUpdateEvent" in names and names[-1] == "result"
        chat = await client.post("/v1/conversations/a/runs", json={"message": [
            {"role": "user", "content": "and now?"}]})
        assert chat.status_code == 200 and chat.json()["text"] == "again"
        history = (await client.get("/v1/conversations/a")).json()
        fits(document, "AgentHistory", history)
        said = [m["contents"][0]["text"] for m in history["messages"]]
        assert said == ["hi", "hello", "and now?", "again"]
        bad = await client.post("/v1/conversations/a/runs", json={"message": [
            {"role": "wizard", "content": "x"}]})
        assert bad.status_code == 422 and "role" in bad.json()["error"]["message"]
        assert (await client.get("/v1/conversations/nobody")).status_code == 404
