"""Answers built from a request's JSON Schema, in a real browser (``form_flows.py``).

A structured answer (string, bounded number, enum, boolean, a list of objects, an optional
field) is filled field by field and reaches the workflow typed as its schema says; a value the
schema refuses is named and nothing is sent; an object of no fixed shape is answered as raw
JSON; a page behind the head gets the native API's 409, shown, and nothing of it is taken.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.inspector.inspector_support import (
    Servers,
    conversation_url,
    detail,
    expect,
    native_run,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def paused(servers: Servers, conversation_id: str) -> tuple[Any, Any]:
    server = servers.serve("form_flows:workflow")
    answer = await native_run(server, conversation_id, {"message": "go"})
    assert answer["status"] == "awaiting_responses", answer
    return server, await detail(server, conversation_id)


async def test_a_structured_answer_is_filled_field_by_field_and_arrives_typed(
    servers: Servers, page: Any,
) -> None:
    server, shown = await paused(servers, "typed")
    await page.goto(conversation_url(server, "typed"))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    form = page.get_by_test_id("pending-request").get_by_test_id("answer-form")
    await form.locator('[name="customer"]').fill("Ada")
    await form.locator('[name="amount"]').fill("12.5")
    await form.locator('[name="priority"]').select_option("high")
    await form.locator('[name="rush"][value="true"]').check()
    await form.locator('[data-action="add-item"]').first.click()
    await form.locator('[name="items[0].sku"]').fill("SKU-1")
    await form.locator('[name="items[0].quantity"]').fill("3")
    await page.get_by_test_id("answer-submit").click()

    outputs = page.get_by_test_id("outputs").locator(":scope > li")
    await expect(outputs).to_have_count(1)
    after = await detail(server, "typed")
    assert after["outputs"] == [{"refund": {
        "customer": "Ada", "amount": 12.5, "priority": "high", "rush": True,
        "items": [{"sku": "SKU-1", "quantity": 3}], "note": None}}]
    assert len(after["snapshots"]) > len(shown["snapshots"])

    # the next request takes any object: the form is raw JSON, parsed before it is sent
    (extra,) = after["pending_requests"]
    assert extra["response_schema"] == {"type": "object"}
    block = page.locator(
        f'[data-testid="pending-request"][data-request-id="{extra["request_id"]}"]')
    raw = block.get_by_test_id("answer-form").locator("textarea")
    await raw.fill('{"gift": true, "tags": ["a", "b"]}')
    await block.get_by_test_id("answer-submit").click()
    await expect(outputs).to_have_count(2)
    done = await detail(server, "typed")
    assert done["outputs"][-1] == {"extra": {"gift": True, "tags": ["a", "b"]}}


async def test_a_value_the_schema_refuses_is_named_and_nothing_is_sent(
    servers: Servers, page: Any,
) -> None:
    server, shown = await paused(servers, "refused")
    await page.goto(conversation_url(server, "refused"))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    form = page.get_by_test_id("pending-request").get_by_test_id("answer-form")
    await form.locator('[name="customer"]').fill("Ada")
    await form.locator('[name="amount"]').fill("900")  # the schema's maximum is 500
    await form.locator('[name="priority"]').select_option("low")
    await form.locator('[name="rush"][value="false"]').check()
    await page.get_by_test_id("answer-submit").click()

    errors = page.get_by_test_id("answer-errors")
    await expect(errors).to_be_visible()
    await expect(errors).to_contain_text("amount")
    after = await detail(server, "refused")
    assert after["snapshots"] == shown["snapshots"] and after["status"] == "awaiting_responses"
    await expect(form.locator('[name="amount"]')).to_have_value("900")  # kept to correct


async def test_a_page_behind_the_head_gets_the_409_and_nothing_is_taken(
    servers: Servers, page: Any, browser_log: Any,
) -> None:
    server, shown = await paused(servers, "stale")
    await page.goto(conversation_url(server, "stale"))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    (request,) = shown["pending_requests"]
    answered = {"customer": "Bob", "amount": 1, "priority": "low", "rush": False}
    moved = await native_run(server, "stale", {"responses": {request["request_id"]: answered}})
    assert moved["status"] == "awaiting_responses", moved  # answered elsewhere meanwhile

    browser_log.expect(r"status of 409")
    form = page.get_by_test_id("pending-request").get_by_test_id("answer-form")
    await form.locator('[name="customer"]').fill("Ada")
    await form.locator('[name="amount"]').fill("5")
    await form.locator('[name="priority"]').select_option("high")
    await form.locator('[name="rush"][value="true"]').check()
    await page.get_by_test_id("answer-submit").click()

    banner = page.get_by_test_id("error-banner")
    await expect(banner).to_be_visible()
    await expect(banner).not_to_be_empty()
    after = await detail(server, "stale")
    assert after["outputs"] == [{"refund": {**answered, "items": [], "note": None}}]
    assert [o for o in after["outputs"] if o["refund"]["customer"] == "Ada"] == []
