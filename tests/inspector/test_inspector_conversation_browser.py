"""The inspector in a real browser, on the approval sample served with ``--inspector``.

A conversation made by a native POST pauses for a boolean approval; the pages list it, draw
its snapshot tree and its workflow graph, answer it through the form built from the request's
schema, branch from an earlier snapshot and diff any two snapshots. Every expectation waits
for a DOM state (Playwright's ``expect`` retries until its timeout); nothing sleeps.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.inspector.inspector_support import (
    Servers,
    conversation_url,
    detail,
    expect,
    inspector_api,
    native_run,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

TARGET = "samples.approval:workflow"
DRAFT = "Five things to know about owls."
# the answer's turn commits its input, then the reviewer's superstep
ANSWER_SNAPSHOTS = 2
# a workflow with nothing left to do and nothing pending is idle (a new message starts afresh)
DONE = "idle"


async def awaiting(servers: Servers, conversation_id: str = "owls") -> tuple[Any, Any]:
    """A served approval sample with one conversation paused on its approval request."""
    server = servers.serve(TARGET)
    answer = await native_run(server, conversation_id, {"message": "owls"})
    assert answer["status"] == "awaiting_responses", answer
    return server, await detail(server, conversation_id)


def node(page: Any, snapshot_id: str) -> Any:
    return page.locator(f'[data-testid="snapshot-node"][data-snapshot-id="{snapshot_id}"]')


async def active_executors(page: Any) -> list[str]:
    graph = page.get_by_test_id("workflow-graph")
    return sorted(await graph.locator('[data-testid="executor-node"][data-active="true"]')
                  .evaluate_all("nodes => nodes.map(n => n.dataset.executorId)"))


async def test_the_list_shows_the_paused_conversation_and_its_page_draws_tree_and_graph(
    servers: Servers, page: Any,
) -> None:
    server, shown = await awaiting(servers)
    snapshots = shown["snapshots"]
    await page.goto(server.inspector)
    await expect(page.locator("body")).to_have_attribute("data-ready", "list")
    rows = page.get_by_test_id("conversation-list").get_by_test_id("conversation-row")
    await expect(rows).to_have_count(1)
    row = rows.and_(page.locator('[data-conversation-id="owls"]'))
    await expect(row).to_contain_text("awaiting_responses")

    await row.get_by_role("link").first.click()
    await expect(page).to_have_url(conversation_url(server, "owls"))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    header = page.get_by_test_id("conversation-header")
    await expect(header).to_contain_text("owls")
    await expect(header.get_by_test_id("conversation-status")).to_have_text("awaiting_responses")
    await expect(header.get_by_test_id("protocol")).to_contain_text("native")

    nodes = page.get_by_test_id("snapshot-tree").get_by_test_id("snapshot-node")
    await expect(nodes).to_have_count(len(snapshots))
    assert sorted(await nodes.evaluate_all("ns => ns.map(n => n.dataset.snapshotId)")) == \
        sorted(s["snapshot_id"] for s in snapshots)
    head = page.locator('[data-testid="snapshot-node"][data-head="true"]')
    await expect(head).to_have_count(1)
    await expect(head).to_have_attribute("data-snapshot-id", shown["head_snapshot_id"])
    await expect(head).to_have_attribute("data-tip", "true")

    graph = page.get_by_test_id("workflow-graph")
    executors = graph.get_by_test_id("executor-node")
    await expect(executors).to_have_count(2)
    assert sorted(await executors.evaluate_all("ns => ns.map(n => n.dataset.executorId)")) == \
        ["reviewer", "writer"]
    # each superstep's snapshot marks the executors that ran in it: the writer, then the reviewer
    for snapshot in snapshots:
        ran = (await inspector_api(server, f"conversations/owls/snapshots/"
                                           f"{snapshot['snapshot_id']}"))["executors"]
        await node(page, snapshot["snapshot_id"]).click()
        await expect(node(page, snapshot["snapshot_id"])).to_have_attribute(
            "data-selected", "true")
        await expect(page).to_have_url(
            conversation_url(server, "owls", snapshot["snapshot_id"]))
        await expect(graph.locator('[data-testid="executor-node"][data-active="true"]')) \
            .to_have_count(len(ran))
        assert await active_executors(page) == sorted(ran)
    assert [s["metadata"]["superstep"] for s in snapshots] == [0, 1, 2]
    assert await active_executors(page) == ["reviewer"]
    await expect(page.get_by_test_id("pending-request")).to_have_count(1)
    await expect(page.get_by_test_id("pending-request")).to_contain_text(DRAFT)


async def test_answering_the_request_in_its_form_grows_the_tree_and_publishes(
    servers: Servers, page: Any,
) -> None:
    server, shown = await awaiting(servers)
    before = len(shown["snapshots"])
    (request,) = shown["pending_requests"]
    await page.goto(conversation_url(server, "owls"))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    nodes = page.get_by_test_id("snapshot-node")
    await expect(nodes).to_have_count(before)

    pending = page.locator(
        f'[data-testid="pending-request"][data-request-id="{request["request_id"]}"]')
    form = pending.get_by_test_id("answer-form")
    await form.get_by_label("yes", exact=True).check()
    await pending.get_by_test_id("answer-submit").click()

    await expect(nodes).to_have_count(before + ANSWER_SNAPSHOTS)
    await expect(page.get_by_test_id("conversation-status")).to_have_text(DONE)
    await expect(page.get_by_test_id("outputs")).to_contain_text(f"published: {DRAFT}")
    await expect(page.get_by_test_id("pending-request")).to_have_count(0)
    after = await detail(server, "owls")
    assert after["status"] == DONE
    assert len(after["snapshots"]) == before + ANSWER_SNAPSHOTS
    assert after["outputs"] == [f"published: {DRAFT}"]
    head = page.locator('[data-testid="snapshot-node"][data-head="true"]')
    await expect(head).to_have_attribute("data-snapshot-id", after["head_snapshot_id"])
    # the page's own turn is streamed: its events are logged however short it was
    events = page.get_by_test_id("event")
    await expect(events.and_(page.locator('[data-type="OutputEvent"]'))).to_have_count(1)
    await expect(events.and_(page.locator('[data-type="SnapshotCommittedEvent"]'))
                 ).to_have_count(ANSWER_SNAPSHOTS)


async def test_branching_from_the_paused_snapshot_adds_a_second_tip_and_keeps_every_snapshot(
    servers: Servers, page: Any,
) -> None:
    server, shown = await awaiting(servers)
    paused = shown["head_snapshot_id"]
    (request,) = shown["pending_requests"]
    answered = await native_run(server, "owls", {"responses": {request["request_id"]: True}})
    assert answered["status"] == DONE, answered
    published = await detail(server, "owls")
    earlier = {s["snapshot_id"] for s in published["snapshots"]}
    assert published["tips"] == [published["head_snapshot_id"]]

    await page.goto(conversation_url(server, "owls", paused))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    await expect(node(page, paused)).to_have_attribute("data-selected", "true")
    nodes = page.get_by_test_id("snapshot-node")
    await expect(nodes).to_have_count(len(earlier))
    # the paused snapshot had the approval pending: the branch form answers it, "no" this time
    branch = page.get_by_test_id("branch-form")
    await branch.get_by_label("no", exact=True).check()
    await branch.get_by_test_id("branch-submit").click()

    await expect(nodes).to_have_count(len(earlier) + ANSWER_SNAPSHOTS)
    tips = page.locator('[data-testid="snapshot-node"][data-tip="true"]')
    await expect(tips).to_have_count(2)
    shown_ids = set(await nodes.evaluate_all("ns => ns.map(n => n.dataset.snapshotId)"))
    assert earlier < shown_ids  # nothing deleted: the published branch is all still there
    branched = await detail(server, "owls")
    assert len(branched["tips"]) == 2 and published["head_snapshot_id"] in branched["tips"]
    assert {s["snapshot_id"] for s in branched["snapshots"]} == shown_ids
    # the new branch is the conversation's head now: its output is the dropped draft
    await expect(page.get_by_test_id("conversation-status")).to_have_text(DONE)
    head = page.locator('[data-testid="snapshot-node"][data-head="true"]')
    await expect(head).to_have_attribute("data-snapshot-id", branched["head_snapshot_id"])
    assert branched["head_snapshot_id"] not in earlier
    await expect(page.get_by_test_id("outputs")).to_contain_text("dropped")


async def test_the_diff_view_lists_changes_against_the_parent_or_any_chosen_snapshot(
    servers: Servers, page: Any,
) -> None:
    server, shown = await awaiting(servers)
    root, wrote, asked = (s["snapshot_id"] for s in shown["snapshots"])
    await page.goto(conversation_url(server, "owls", wrote))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    await expect(node(page, wrote)).to_have_attribute("data-selected", "true")

    diff = page.get_by_test_id("diff-view")
    entries = diff.get_by_test_id("diff-entry")
    # against its parent (the accepted input): the writer's first state, its draft sent on
    writer = diff.locator('[data-testid="diff-entry"][data-path^="executor_states.writer"]')
    await expect(writer).to_have_count(1)
    await expect(writer).to_have_attribute("data-change", "added")
    await expect(writer).to_contain_text('"drafts":1')
    await expect(page.get_by_test_id("diff-against")).to_have_value("parent")
    # the head against its parent: the writer's state is as it was, a request is pending
    await node(page, asked).click()
    await expect(node(page, asked)).to_have_attribute("data-selected", "true")
    await expect(writer).to_have_count(0)
    requests = diff.locator('[data-testid="diff-entry"]'
                            '[data-path^="messages.pending.requests."][data-change="added"]')
    await expect(requests).to_have_count(1)
    # the head against the root: both
    await page.get_by_test_id("diff-against").select_option(root)
    await expect(writer).to_have_count(1)
    await expect(requests).to_have_count(1)
    changes = set(await entries.evaluate_all("es => es.map(e => e.dataset.change)"))
    assert changes <= {"added", "removed", "changed"}, changes
    # and against itself: nothing differs
    await page.get_by_test_id("diff-against").select_option(asked)
    await expect(entries).to_have_count(0)
    await expect(diff).to_contain_text("no differences")
