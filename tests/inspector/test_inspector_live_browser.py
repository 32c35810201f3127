"""A conversation page follows a running turn live, and cancels one, without reloading.

The turn is held on a marker-file gate (``tests/e2e/e2e_flows.py``: ``hold:<name>``) until the
page shows it running; then the gate opens (or the page's cancel button stops it) and the
same page, never reloaded, shows the tree grown and the new status.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.inspector.inspector_support import (
    Gates,
    Process,
    Servers,
    conversation_url,
    detail,
    encode,
    expect,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def post_run(server: Process, conversation_id: str, message: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=120) as http:
        return await http.post(
            f"{server.url}/v1/conversations/{encode(conversation_id)}/runs",
            json={"message": message})


async def open_running(page: Any, server: Process, gates: Gates, name: str
                       ) -> tuple[asyncio.Task[httpx.Response], Any]:
    """A turn held on gate ``name``, and its conversation's page showing it running.

    The conversation's first turn has ended; its second is the held one."""
    first = await post_run(server, name, "hello")
    assert first.status_code == 200 and first.json()["status"] == "idle", first.text
    run = asyncio.create_task(post_run(server, name, f"hold:{name}"))
    await gates.wait_entered(name)
    await page.goto(conversation_url(server, name))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    await expect(page.get_by_test_id("conversation-status")).to_have_text("running")
    await expect(page.get_by_test_id("cancel-run")).to_be_visible()
    await page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    return run, await detail(server, name)


async def test_the_page_follows_a_running_turn_until_it_ends_without_reloading(
    servers: Servers, gates: Gates, page: Any,
) -> None:
    server = servers.serve("e2e_flows:workflow")
    run, running = await open_running(page, server, gates, "live")
    nodes = page.get_by_test_id("snapshot-node")
    await expect(nodes).to_have_count(len(running["snapshots"]))
    await expect(page.get_by_test_id("lease")).to_contain_text("live")

    gates.release("live")
    answer = await run
    assert answer.status_code == 200 and answer.json()["status"] == "idle", answer.text
    done = await detail(server, "live")
    assert len(done["snapshots"]) > len(running["snapshots"])
    await expect(page.get_by_test_id("conversation-status")).to_have_text("idle")
    await expect(nodes).to_have_count(len(done["snapshots"]))
    head = page.locator('[data-testid="snapshot-node"][data-head="true"]')
    await expect(head).to_have_attribute("data-snapshot-id", done["head_snapshot_id"])
    await expect(page.get_by_test_id("outputs").locator("li")).to_have_text(["HELLO", "HOLD:LIVE"])
    await expect(page.get_by_test_id("cancel-run")).to_be_hidden()
    # the event log got the turn's frames as they came
    events = page.get_by_test_id("events").get_by_test_id("event")
    await expect(events.first).to_be_attached()
    types = await events.evaluate_all("es => es.map(e => e.dataset.type)")
    assert "SnapshotCommittedEvent" in types, types
    assert await page.evaluate("window.__sameDocument") is True


async def test_a_new_conversation_is_shown_while_its_first_turn_runs(
    servers: Servers, gates: Gates, page: Any,
) -> None:
    server = servers.serve("e2e_flows:workflow")
    run = asyncio.create_task(post_run(server, "fresh", "hold:fresh"))
    await gates.wait_entered("fresh")
    await page.goto(conversation_url(server, "fresh"))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    await expect(page.get_by_test_id("conversation-status")).to_have_text("running")
    running = await detail(server, "fresh")
    assert running["head_snapshot_id"] is None  # nothing of it is the conversation's yet
    nodes = page.get_by_test_id("snapshot-node")
    await expect(nodes).to_have_count(len(running["snapshots"]))
    await expect(page.get_by_test_id("turns")).to_contain_text("running")
    await page.evaluate("window.__sameDocument = true")

    gates.release("fresh")
    answer = await run
    assert answer.status_code == 200 and answer.json()["status"] == "idle", answer.text
    done = await detail(server, "fresh")
    await expect(page.get_by_test_id("conversation-status")).to_have_text("idle")
    await expect(nodes).to_have_count(len(done["snapshots"]))
    head = page.locator('[data-testid="snapshot-node"][data-head="true"]')
    await expect(head).to_have_attribute("data-snapshot-id", done["head_snapshot_id"])
    await expect(page.get_by_test_id("outputs").locator("li")).to_have_text(["HOLD:FRESH"])
    assert await page.evaluate("window.__sameDocument") is True


async def test_the_cancel_button_stops_a_running_turn(
    servers: Servers, gates: Gates, page: Any,
) -> None:
    server = servers.serve("e2e_flows:workflow")
    run, _ = await open_running(page, server, gates, "stop")

    await page.get_by_test_id("cancel-run").click()
    answer = await asyncio.wait_for(run, 60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "cancelled", answer.text
    # the cut turn is not the conversation's: its good head is the first turn's end again,
    # and storage's head (the cancelled turn's accepted input) is marked apart from it
    after = await detail(server, "stop")
    assert after["storage_head_snapshot_id"] != after["head_snapshot_id"], after
    status = page.get_by_test_id("conversation-status")
    await expect(status).not_to_have_text("running")
    await expect(status).to_have_text(after["status"])
    await expect(page.get_by_test_id("cancel-run")).to_be_hidden()
    head = page.locator('[data-testid="snapshot-node"][data-head="true"]')
    await expect(head).to_have_attribute("data-snapshot-id", after["head_snapshot_id"])
    cut = page.locator('[data-testid="snapshot-node"][data-storage-head="true"]')
    await expect(cut).to_have_attribute("data-snapshot-id", after["storage_head_snapshot_id"])
    await expect(page.get_by_test_id("snapshot-node")).to_have_count(len(after["snapshots"]))
    assert await page.evaluate("window.__sameDocument") is True
    assert not (gates.folder / "stop.release").exists()  # it was the button, not the gate
