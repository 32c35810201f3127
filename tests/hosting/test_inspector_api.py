"""The inspector's reads, in process: ``/inspector/api`` beside a served workflow (principals,
paging, filters, snapshot states and their supersteps, typed errors), its pages' headers,
the read-only app over a storage, and the adapter routes ``/openapi.json`` now lists."""

from __future__ import annotations

import asyncio
import urllib.parse
from typing import Any

import httpx
import pytest
from hosting_flows import Gate
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from checkflow.agents import ScriptedAgent
from checkflow.cli import main
from checkflow.hosting import AgentHost, Host, WorkflowHost, create_app
from checkflow.hosting._keys import ConversationKey
from checkflow.inspector import InspectorAdapter, create_inspector_app
from checkflow.sessions import InMemorySessionStore
from checkflow.storage import InMemoryCheckpointStorage
from checkflow.workflows import Workflow

API = "/inspector/api"


def client_for(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def by_bearer(request: Any) -> str | None:
    return str(request.headers.get("authorization", "")).removeprefix("Bearer ") or None


@pytest.fixture
def stores() -> tuple[InMemorySessionStore, InMemoryCheckpointStorage]:
    return InMemorySessionStore(), InMemoryCheckpointStorage()


@pytest.fixture
def served(workflow: Workflow, stores: tuple[InMemorySessionStore, InMemoryCheckpointStorage]
           ) -> WorkflowHost:
    sessions, checkpoints = stores
    return WorkflowHost(workflow, session_store=sessions, checkpoint_storage=checkpoints)


def quoted(conversation_id: str) -> str:
    return urllib.parse.quote(conversation_id, safe="")


async def test_meta_draws_the_served_workflows_graph(served: WorkflowHost) -> None:
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        meta = (await client.get(f"{API}/meta")).json()
    assert meta["mode"] == "serve" and meta["writable"] is True
    graph = meta["workflow"]
    assert graph["name"] == "shouter" and graph["start"] == "start"
    assert [e["id"] for e in graph["executors"]] == ["start", "shout", "finish"]
    assert [(e["source"], e["target"], e["kind"]) for e in graph["edges"]] == [
        ("start", "shout", "edge"), ("shout", "finish", "edge")]


async def test_a_paused_conversation_shows_its_tree_requests_turns_and_states(
    served: WorkflowHost,
) -> None:
    await served.run("c1", message="ASK it")
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        (row,) = (await client.get(f"{API}/conversations")).json()["conversations"]
        assert row["conversation_id"] == "c1" and row["status"] == "awaiting_responses"
        assert row["protocol"] == "native" and row["snapshot_count"] == 4
        assert row["lease"] is None
        detail = (await client.get(f"{API}/conversations/c1")).json()
        snapshots = detail["snapshots"]
        assert [s["metadata"]["superstep"] for s in snapshots] == [0, 1, 2, 3]
        assert detail["head_snapshot_id"] == snapshots[-1]["snapshot_id"] == row[
            "head_snapshot_id"]
        assert detail["tips"] == [detail["head_snapshot_id"]]
        (request,) = detail["pending_requests"]
        assert request["response_schema"] == {"type": "boolean"}
        assert request["response_type"] == "bool" and request["source_executor_id"] == "finish"
        assert [(t["protocol"], t["state"]) for t in detail["turns"]] == [
            ("native", "committed")]
        assert detail["resume_token"]["snapshot_id"] == detail["head_snapshot_id"]
        first, second = [
            (await client.get(f"{API}/conversations/c1/snapshots/{s['snapshot_id']}")).json()
            for s in snapshots[:2]]
        assert set(second["state"]) == {"workflow_state", "executor_states", "edge_states",
                                        "messages"}
        assert first["executors"] == []  # input accepted: nothing ran yet
        assert second["executors"] == ["start"]  # the superstep that made it ran start
        third = (await client.get(
            f"{API}/conversations/c1/snapshots/{snapshots[2]['snapshot_id']}")).json()
        assert third["executors"] == ["shout"]
        assert third["state"]["executor_states"]["shout"] == {"seen": 1}
        head = (await client.get(
            f"{API}/conversations/c1/snapshots/{detail['head_snapshot_id']}")).json()
        assert [r["request_id"] for r in head["pending_requests"]] == [request["request_id"]]


async def test_answering_then_branching_grows_the_tree_and_keeps_every_snapshot(
    served: WorkflowHost,
) -> None:
    paused = await served.run("c1", message="ASK it")
    (request_id,) = paused.pending_requests
    await served.run("c1", responses={request_id: True})
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        before = (await client.get(f"{API}/conversations/c1")).json()
        assert before["status"] == "idle" and before["outputs"] == ["approved"]
        earlier = before["snapshots"][1]["snapshot_id"]
        answer = await client.post("/v1/conversations/c1/runs",
                                   json={"message": "again", "from_snapshot": earlier})
        assert answer.status_code == 200, answer.text
        after = (await client.get(f"{API}/conversations/c1")).json()
    ids = [s["snapshot_id"] for s in after["snapshots"]]
    assert [s["snapshot_id"] for s in before["snapshots"]] == ids[:len(before["snapshots"])]
    assert len(after["tips"]) == 2 and before["head_snapshot_id"] in after["tips"]
    assert after["head_snapshot_id"] != before["head_snapshot_id"]


async def test_a_running_turn_shows_its_live_lease(served: WorkflowHost, gate: Gate) -> None:
    await served.run("c1", message="hi")
    running = asyncio.ensure_future(served.run("c1", message="hold"))
    first = asyncio.ensure_future(served.run("c2", message="hold"))
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        try:
            while gate.runs < 2:  # both turns hold their leases inside the start executor
                gate.entered.clear()
                await asyncio.wait_for(gate.entered.wait(), 10)
            rows = {r["conversation_id"]: r for r in
                    (await client.get(f"{API}/conversations")).json()["conversations"]}
            detail = (await client.get(f"{API}/conversations/c1")).json()
            fresh = (await client.get(f"{API}/conversations/c2")).json()
        finally:
            gate.release.set()
            await asyncio.gather(running, first)
        after = (await client.get(f"{API}/conversations/c1")).json()
    assert rows["c1"]["status"] == "running" and rows["c1"]["lease"]["live"] is True
    assert rows["c2"]["status"] == "running" and rows["c2"]["head_snapshot_id"] is None
    assert detail.get("status") == "running", detail
    assert detail["lease"]["owner"]
    assert detail["turns"][-1]["state"] == "running"  # the lease's turn, after the lineage's
    assert [t["state"] for t in after["turns"]] == ["committed", "committed"]
    # a first turn is read from the checkpoint it writes: no good head yet, its input there
    assert fresh["status"] == "running" and fresh["head_snapshot_id"] is None
    assert fresh["resume_token"] is None and fresh["pending_requests"] == []
    assert [s["metadata"]["boundary"] for s in fresh["snapshots"]][:1] == ["input_accepted"]
    assert fresh["storage_head_snapshot_id"] == fresh["snapshots"][-1]["snapshot_id"]
    assert [(t["state"], t["protocol"]) for t in fresh["turns"]] == [("running", "native")]
    assert rows["c2"]["snapshot_count"] == len(fresh["snapshots"]) >= 1
    assert after["status"] == "idle" and after["lease"] is None
    assert len(after["snapshots"]) > len(detail["snapshots"])


async def test_conversations_page_newest_first_and_filter_by_status(
    served: WorkflowHost,
) -> None:
    for name in ("a", "b", "c"):
        await served.run(name, message="ASK it" if name == "b" else "hi")
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        seen, cursor = [], None
        while True:
            query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
            page = (await client.get(f"{API}/conversations{query}")).json()
            assert page["total"] == 3
            seen += [c["conversation_id"] for c in page["conversations"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == ["c", "b", "a"]
        paused = (await client.get(f"{API}/conversations?status=awaiting_responses")).json()
        assert [c["conversation_id"] for c in paused["conversations"]] == ["b"]
        assert paused["total"] == 1
        done = (await client.get(f"{API}/conversations?status=idle")).json()
        assert [c["conversation_id"] for c in done["conversations"]] == ["c", "a"]


@pytest.mark.parametrize(("query", "code"), [
    ("?limit=0", "invalid_limit"), ("?limit=1001", "invalid_limit"), ("?limit=x", "invalid_limit"),
    ("?cursor=abc", "invalid_cursor"),
])
async def test_a_bad_page_request_is_refused_by_name(served: WorkflowHost, query: str,
                                                     code: str) -> None:
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        answer = await client.get(f"{API}/conversations{query}")
    assert answer.status_code == 400 and answer.json()["error"]["code"] == code


async def test_unknown_conversations_snapshots_and_routes_are_typed_404s(
    served: WorkflowHost,
) -> None:
    await served.run("c1", message="hi")
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        missing = await client.get(f"{API}/conversations/nope")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "conversation_not_found"
        snapshot = await client.get(f"{API}/conversations/c1/snapshots/nope")
        assert snapshot.status_code == 404 and "nope" in snapshot.json()["error"]["message"]
        route = await client.get(f"{API}/conversations/c1/elsewhere/x")
        assert route.status_code == 404 and route.json()["error"]["code"] == "not_found"
        bad = await client.get(f"{API}/conversations/%FF")
        assert bad.status_code == 400 and "UTF-8" in bad.json()["error"]["message"]


async def test_an_id_holding_a_slash_is_one_segment(served: WorkflowHost) -> None:
    await served.run("team/x/snapshots", message="hi")
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        detail = await client.get(f"{API}/conversations/{quoted('team/x/snapshots')}")
        assert detail.status_code == 200, detail.text
        assert detail.json()["conversation_id"] == "team/x/snapshots"
        snapshot_id = detail.json()["head_snapshot_id"]
        one = await client.get(
            f"{API}/conversations/{quoted('team/x/snapshots')}/snapshots/{snapshot_id}")
        assert one.status_code == 200 and one.json()["snapshot_id"] == snapshot_id


async def test_a_principal_sees_only_its_own_conversations(served: WorkflowHost) -> None:
    await served.run("mine", message="hi", principal="alice")
    await served.run("theirs", message="ASK it", principal="bob")
    app = create_app(served, adapters=[InspectorAdapter()], authenticate=by_bearer)
    async with client_for(app) as client:
        alice = {"authorization": "Bearer alice"}
        assert (await client.get(f"{API}/conversations")).status_code == 401
        rows = (await client.get(f"{API}/conversations", headers=alice)).json()
        assert [r["conversation_id"] for r in rows["conversations"]] == ["mine"]
        assert (await client.get(f"{API}/conversations/theirs", headers=alice)
                ).status_code == 404
        # ?principal= is the operator's view over a storage, never a way across principals
        assert (await client.get(f"{API}/conversations/theirs?principal=bob", headers=alice)
                ).status_code == 404
        meta = (await client.get(f"{API}/meta", headers=alice)).json()
        assert meta["principal"] == "alice"
        orphans = await client.get(f"{API}/orphans", headers=alice)
        assert orphans.status_code == 403 and orphans.json()["error"]["code"] == "forbidden"
        page = await client.get("/inspector/")  # pages and files need no token, data does
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")


async def test_orphans_are_listed_without_authenticate(served: WorkflowHost) -> None:
    await served.run("c1", message="hi")
    await served.delete("c1")
    # what a server killed during a first turn leaves: a checkpoint its session never named
    abandoned = ConversationKey(None, "c1").checkpoint_id(0)
    workflow = await served.workflow()
    left = workflow.create_checkpoint(checkpoint_id=abandoned,
                                      checkpoint_storage=served.checkpoint_storage)
    await workflow.run("left behind", checkpoint=left)
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        orphans = (await client.get(f"{API}/orphans")).json()["orphans"]
        rows = (await client.get(f"{API}/conversations")).json()
    assert orphans == [abandoned]
    assert rows["conversations"] == []  # a deleted conversation is listed nowhere


async def test_pages_carry_a_strict_content_security_policy(served: WorkflowHost) -> None:
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        redirect = await client.get("/inspector")
        assert redirect.status_code == 308 and redirect.headers["location"] == "/inspector/"
        for path in ("/inspector/", "/inspector/assets/inspector.js", "/docs/",
                     f"{API}/meta"):
            answer = await client.get(path)
            assert answer.status_code == 200, path
            policy = answer.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "default-src 'none'" in policy
            assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
            assert answer.headers["x-content-type-options"] == "nosniff"
        again = await client.get("/inspector/assets/inspector.js",
                                 headers={"if-none-match": answer.headers.get("etag", "")})
        for path in ("/inspector/assets/nothing.js", "/inspector/assets/..%2F_reads.py",
                     "/inspector/assets/../_reads.py"):
            assert (await client.get(path)).status_code == 404, path
    assert again.status_code == 200  # the meta answer's ETag is no file's


async def test_an_asset_is_revalidated_by_its_etag(served: WorkflowHost) -> None:
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        first = await client.get("/inspector/assets/inspector.js")
        again = await client.get("/inspector/assets/inspector.js",
                                 headers={"if-none-match": first.headers["etag"]})
    assert first.headers["content-type"].startswith("text/javascript")
    assert again.status_code == 304 and again.content == b""


async def test_over_a_storage_every_principal_is_read_and_nothing_writes(
    served: WorkflowHost, stores: tuple[InMemorySessionStore, InMemoryCheckpointStorage],
) -> None:
    await served.run("shared", message="ASK it", principal="alice")
    await served.run("shared", message="hi", principal="bob")
    app = create_inspector_app(*stores, storage="memory:")
    async with client_for(app) as client:
        meta = (await client.get(f"{API}/meta")).json()
        assert meta == {"mode": "storage", "writable": False, "storage": "memory:",
                        "principal": None, "workflow": None}
        rows = (await client.get(f"{API}/conversations")).json()["conversations"]
        assert sorted((r["principal"], r["status"]) for r in rows) == [
            ("alice", "awaiting_responses"), ("bob", "idle")]
        alice = (await client.get(f"{API}/conversations/shared?principal=alice")).json()
        assert alice["principal"] == "alice"
        assert alice["pending_requests"][0]["response_schema"] == {"type": "boolean"}
        assert (await client.get(f"{API}/conversations/shared")).status_code == 404
        for method, path in [("POST", "/v1/conversations/shared/runs"),
                             ("POST", "/v1/conversations/shared/cancel"),
                             ("DELETE", "/v1/conversations/shared"),
                             ("POST", f"{API}/conversations/shared")]:
            answer = await client.request(method, path, json={"message": "x"})
            assert answer.status_code in (404, 405), (method, path)
        assert (await client.get(f"{API}/orphans")).status_code == 200
        assert (await client.get("/")).headers["location"] == "/inspector/"
    assert (await served.get_conversation("shared", principal="alice")).status.value == (
        "awaiting_responses")


async def test_the_openapi_document_lists_adapter_routes_under_their_names(
    served: WorkflowHost,
) -> None:
    async with client_for(create_app(served, adapters=[InspectorAdapter()])) as client:
        document = (await client.get("/openapi.json")).json()
    meta = document["paths"]["/inspector/api/meta"]["get"]
    assert meta["tags"] == ["inspector"] and "mode" in meta["summary"]
    one = document["paths"]["/inspector/api/conversations/{rest}"]["get"]
    assert one["parameters"][0]["name"] == "rest"
    assert document["paths"]["/v1/conversations/{id}/runs"]["post"]["tags"] == ["native"]


class _Greedy:
    """An adapter claiming every path public: only its own prefixes may be."""

    prefixes = ("/greedy",)

    def is_public(self, path: str) -> bool:
        return True

    def routes(self, host: Host) -> list[BaseRoute]:
        async def hello(request: Request) -> JSONResponse:
            return JSONResponse({"hello": True})

        return [Route("/greedy", hello, methods=["GET"])]


async def test_an_adapter_can_open_only_paths_of_its_own(served: WorkflowHost) -> None:
    app = create_app(served, adapters=[_Greedy()], authenticate=by_bearer)
    async with client_for(app) as client:
        assert (await client.get("/greedy")).status_code == 200
        assert (await client.get("/v1/conversations")).status_code == 401


def test_the_inspector_refuses_an_agent_host() -> None:
    host = AgentHost(ScriptedAgent("scripted", replies=["hi"]))
    with pytest.raises(TypeError, match="needs a WorkflowHost"):
        create_app(host, adapters=[InspectorAdapter()])


ECHO = ScriptedAgent("echo", replies=["hi"])
"""``serve tests.hosting.test_inspector_api:ECHO``: an agent, which keeps no checkpoints."""


def test_serve_refuses_the_inspector_for_an_agent(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["serve", "tests.hosting.test_inspector_api:ECHO", "--inspector",
                   "--storage", "memory:", "--port", "0"])
    assert status == 2
    assert "--inspector shows workflow checkpoints" in capsys.readouterr().err


def test_inspect_names_a_storage_it_cannot_open(tmp_path: Any,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nothing-here"
    assert main(["inspect", "--storage", f"file:{missing}", "--port", "0"]) == 2
    assert f"no such directory '{missing}'" in capsys.readouterr().err
    assert main(["inspect", "--storage", "memory:", "--port", "70000"]) == 2
    assert "port 70000 is out of range" in capsys.readouterr().err


async def test_the_inspector_and_docs_are_off_unless_mounted(served: WorkflowHost) -> None:
    async with client_for(create_app(served)) as client:
        for path in ("/inspector/", "/inspector/api/meta", "/docs/"):
            assert (await client.get(path)).status_code == 404, path
