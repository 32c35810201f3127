"""``checkflow inspect --storage`` in a real browser: a stopped server's conversations, read-only.

No workflow code is loaded and no route writes: the pages say so (``read-only-note``) and
offer no form, and the native API's write routes do not exist on that port.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.inspector.inspector_support import Servers, conversation_url, expect, native_run

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_inspecting_a_stopped_server_s_storage_shows_its_conversation_read_only(
    servers: Servers, page: Any,
) -> None:
    served = servers.serve("samples.approval:workflow")
    answer = await native_run(served, "kept", {"message": "owls"})
    assert answer["status"] == "awaiting_responses", answer
    served.stop()

    server = servers.run("inspect", "--storage", servers.storage, "--port", "0")
    await page.goto(server.inspector)
    await expect(page.locator("body")).to_have_attribute("data-ready", "list")
    row = page.locator('[data-testid="conversation-row"][data-conversation-id="kept"]')
    await expect(row).to_contain_text("awaiting_responses")

    await row.get_by_role("link").first.click()
    await expect(page).to_have_url(conversation_url(server, "kept"))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    await expect(page.get_by_test_id("conversation-status")).to_have_text("awaiting_responses")
    await expect(page.get_by_test_id("snapshot-node")).to_have_count(3)
    await expect(page.get_by_test_id("read-only-note")).to_be_visible()
    # the request is shown, with nothing to answer, branch or cancel it with
    pending = page.get_by_test_id("pending-request")
    await expect(pending).to_have_count(1)
    await expect(pending).to_contain_text("Five things to know about owls.")
    for control in ("answer-form", "answer-submit", "branch-form", "branch-submit",
                    "branch-message", "cancel-run"):
        await expect(page.get_by_test_id(control)).to_have_count(0)
    # without the workflow's code there is no graph to draw, only the snapshots' state
    await expect(page.get_by_test_id("executor-node")).to_have_count(0)
    await page.locator('[data-testid="snapshot-node"][data-head="true"]').click()
    await expect(page.get_by_test_id("state-view")).to_contain_text("executor_states")

    async with httpx.AsyncClient(timeout=60) as http:
        meta = (await http.get(f"{server.inspector}api/meta")).json()
        refused = await http.post(f"{server.url}/v1/conversations/x/runs",
                                  json={"message": "owls"})
        refused_here = await http.post(f"{server.url}/v1/conversations/kept/runs",
                                       json={"message": "owls"})
    assert meta["writable"] is False and meta["mode"] == "storage", meta
    assert refused.status_code in (404, 405), refused.text
    assert refused_here.status_code in (404, 405), refused_here.text
