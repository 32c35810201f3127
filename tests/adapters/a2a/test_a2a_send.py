"""The card, blocking and streaming sends, every output kind, direct replies and rejections,
driven by the official a2a-sdk client over JSON-RPC and REST."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.client import Client
from a2a.types import a2a_pb2
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError
from a2a_flows import build_whole_message
from conftest import BASE, ClientMaker, make_app, send, send_task, user_message

from checkflow.adapters.a2a import A2AAdapter
from checkflow.adapters.a2a._parts import proto_value, python_value
from checkflow.agents import ScriptedAgent
from checkflow.hosting import AgentHost, WorkflowHost, create_app

COMPLETED = a2a_pb2.TASK_STATE_COMPLETED


async def test_the_card_names_the_workflow_its_interfaces_and_capabilities(app: Any) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE,
                                 headers={"authorization": "Bearer alice"}) as http:
        response = await http.get("/.well-known/agent-card.json")
    assert response.status_code == 200 and response.headers["etag"]
    card = response.json()
    assert card["name"] == "a2a-test"
    assert card["capabilities"]["streaming"] is True
    assert card["capabilities"]["pushNotifications"] is True  # on by default
    assert [(i["protocolBinding"], i["url"], i["protocolVersion"])
            for i in card["supportedInterfaces"]] == [
        ("JSONRPC", f"{BASE}/a2a", "1.0"), ("HTTP+JSON", f"{BASE}/a2a/rest", "1.0")]
    assert [s["name"] for s in card["skills"]] == ["a2a-test"]


async def test_the_card_names_the_public_url_and_a_given_card_overrides_the_workflow(
        host: WorkflowHost) -> None:
    own = a2a_pb2.AgentCard(name="My agent", description="mine", version="2.0")
    app = make_app(host, agent_card=own, public_url="https://agents.example.com/")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE,
                                 headers={"authorization": "Bearer alice"}) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
    assert (card["name"], card["description"], card["version"]) == ("My agent", "mine", "2.0")
    assert [i["url"] for i in card["supportedInterfaces"]] == [
        "https://agents.example.com/a2a", "https://agents.example.com/a2a/rest"]
    assert card["capabilities"]["streaming"] is True


async def test_a_card_file_overrides_the_workflow(host: WorkflowHost, tmp_path: Any) -> None:
    path = tmp_path / "card.json"
    path.write_text('{"name": "From a file", "description": "filed", "version": "3",'
                    ' "skills": [{"id": "s", "name": "S", "description": "d", "tags": []}]}')
    app = make_app(host, agent_card=path)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE,
                                 headers={"authorization": "Bearer alice"}) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
    assert (card["name"], [s["id"] for s in card["skills"]]) == ("From a file", ["s"])
    assert [i["url"] for i in card["supportedInterfaces"]] == [f"{BASE}/a2a",
                                                               f"{BASE}/a2a/rest"]


def test_a_card_file_that_is_not_a_card_is_refused_naming_it(tmp_path: Any) -> None:
    bad = tmp_path / "card.json"
    bad.write_text('{"name": 3, "nonsense": true}')
    with pytest.raises(ValueError, match=r"card\.json"):
        A2AAdapter(agent_card=bad)
    with pytest.raises(ValueError, match="rpc_path"):
        A2AAdapter(rpc_path="a2a/")


async def test_a_blocking_send_completes_with_a_text_artifact(connect: ClientMaker) -> None:
    client = await connect()
    task = await send_task(client, user_message("hello"))
    assert task.status.state == COMPLETED
    assert [[p.text for p in a.parts] for a in task.artifacts] == [["hello back"]]
    assert [m.parts[0].text for m in task.history if m.role == a2a_pb2.ROLE_USER] == ["hello"]


async def test_data_file_and_chunked_outputs_become_their_artifacts(
        connect: ClientMaker) -> None:
    client = await connect()
    data = await send_task(client, user_message("data"))
    assert python_value(data.artifacts[0].parts[0].data) == {"answer": 42, "items": [1, 2]}
    file = await send_task(client, user_message("file"))
    assert file.artifacts[0].parts[0].raw == b"\x00binary\xff"
    chunks = await send_task(client, user_message("chunks"))
    (artifact,) = chunks.artifacts
    assert artifact.name == "report"
    assert [p.text for p in artifact.parts] == ["part 1 ", "part 2"]


async def test_a_data_part_reaches_the_workflow_as_structured_input(
        connect: ClientMaker) -> None:
    client = await connect()
    task = await send_task(client, user_message(a2a_pb2.Part(data=proto_value({"n": 3}))))
    assert python_value(task.artifacts[0].parts[0].data) == {"echo": {"n": 3}}


async def test_a_one_call_run_yielding_an_a2a_message_is_answered_with_a_message(
        connect: ClientMaker) -> None:
    client = await connect(target=create_app(WorkflowHost(build_whole_message()),
                                             adapters=[A2AAdapter()]))
    (response,) = await send(client, user_message("reply", context_id="ctx-m"))
    assert response.HasField("message") and not response.HasField("task")
    assert response.message.role == a2a_pb2.ROLE_AGENT
    assert [p.text for p in response.message.parts] == ["a direct reply"]
    assert response.message.context_id == "ctx-m"
    # two messages are no lone reply: a task whose artifacts they are
    task = await send_task(client, user_message("reply twice"))
    assert [p.text for a in task.artifacts for p in a.parts] == ["one", "two"]


async def test_an_a2a_message_from_a_start_not_taking_them_is_an_artifact(
        connect: ClientMaker) -> None:
    task = await send_task(await connect(), user_message("message"))
    assert [p.text for a in task.artifacts for p in a.parts] == ["as an artifact"]


async def test_task_rejected_ends_the_task_rejected_with_its_reason(
        connect: ClientMaker) -> None:
    task = await send_task(await connect(), user_message("reject"))
    assert task.status.state == a2a_pb2.TASK_STATE_REJECTED
    assert task.status.message.parts[0].text == "I do not do that"


async def test_any_other_failure_ends_the_task_failed_with_a_message(
        connect: ClientMaker) -> None:
    task = await send_task(await connect(), user_message("boom"))
    assert task.status.state == a2a_pb2.TASK_STATE_FAILED
    assert "exploded" in task.status.message.parts[0].text


async def test_a_streaming_send_gives_the_task_working_artifacts_then_the_final_state(
        connect: ClientMaker) -> None:
    client = await connect(streaming=True)
    events = await send(client, user_message("chunks"))
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds == ["task", "status_update", "artifact_update", "artifact_update",
                     "status_update"]
    assert events[0].task.status.state == a2a_pb2.TASK_STATE_SUBMITTED
    assert events[1].status_update.status.state == a2a_pb2.TASK_STATE_WORKING
    assert [e.artifact_update.append for e in events[2:4]] == [False, True]
    assert events[3].artifact_update.last_chunk
    assert events[4].status_update.status.state == COMPLETED
    assert len({e.task.id or e.status_update.task_id or e.artifact_update.task_id
                for e in events}) == 1


async def test_a_file_part_is_refused_unless_the_start_takes_the_whole_message(
        connect: ClientMaker) -> None:
    client = await connect()
    with pytest.raises(ContentTypeNotSupportedError):
        await send(client, user_message(a2a_pb2.Part(raw=b"x")))
    with pytest.raises(InvalidParamsError, match="exactly one data part"):
        await send(client, user_message("a", a2a_pb2.Part(data=proto_value(1))))


async def test_a_start_declaring_a2a_message_gets_the_whole_message(
        connect: ClientMaker) -> None:
    app = create_app(WorkflowHost(build_whole_message()), adapters=[A2AAdapter()])
    client: Client = await connect(target=app)
    message = user_message(a2a_pb2.Part(text="hi", metadata={"lang": "en"}),
                           a2a_pb2.Part(data=proto_value({"k": [1]})),
                           a2a_pb2.Part(raw=b"abc", filename="f.bin"),
                           a2a_pb2.Part(url="https://example.com/x.png"), context_id="c-w")
    message.metadata.update({"trace": "t1"})
    task = await send_task(client, message)
    seen = python_value(task.artifacts[0].parts[0].data)
    assert seen["message_id"] == message.message_id and seen["context_id"] == "c-w"
    assert seen["task_id"] == task.id and seen["role"] == "user"
    assert seen["metadata"] == {"trace": "t1"}
    assert [(p["kind"], p["text"], p["data"], p["raw"], p["url"], p["metadata"])
            for p in seen["parts"]] == [
        ("text", "hi", None, None, None, {"lang": "en"}), ("data", None, {"k": [1]}, None,
                                                           None, {}),
        ("file", None, None, 3, None, {}), ("file", None, None, None,
                                             "https://example.com/x.png", {})]


async def test_an_agent_host_is_served_too_its_reply_a_text_artifact(
        connect: ClientMaker) -> None:
    app = create_app(AgentHost(ScriptedAgent("greeter", ["hello", "again"])),
                     adapters=[A2AAdapter()])
    client = await connect(target=app)
    first = await send_task(client, user_message("hi", context_id="agent-ctx"))
    second = await send_task(client, user_message("more", context_id="agent-ctx"))
    assert [first.status.state, second.status.state] == [COMPLETED, COMPLETED]
    assert [p.text for a in [*first.artifacts, *second.artifacts] for p in a.parts] == [
        "hello", "again"]


async def test_a_direct_reply_is_recorded_as_a_completed_task(connect: ClientMaker) -> None:
    client = await connect(target=create_app(WorkflowHost(build_whole_message()),
                                             adapters=[A2AAdapter()]))
    (response,) = await send(client, user_message("reply", context_id="ctx-direct"))
    assert response.HasField("message")
    (task,) = (await client.list_tasks(a2a_pb2.ListTasksRequest(
        context_id="ctx-direct", include_artifacts=True))).tasks
    assert task.status.state == COMPLETED
    assert [p.text for a in task.artifacts for p in a.parts] == ["a direct reply"]
