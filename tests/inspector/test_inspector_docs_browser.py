"""``/docs`` in a real browser: every operation of ``/openapi.json``, native and adapters'."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.inspector.inspector_support import Servers, expect

pytestmark = pytest.mark.asyncio(loop_scope="session")

METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


async def test_the_api_reference_renders_every_native_and_adapter_operation(
    servers: Servers, page: Any,
) -> None:
    server = servers.serve("samples.approval:workflow", "--adapters", "native,agui,a2a")
    async with httpx.AsyncClient(timeout=60) as http:
        document = (await http.get(f"{server.url}/openapi.json")).json()
    operations = sorted((method.upper(), path) for path, item in document["paths"].items()
                        for method in item if method in METHODS)
    paths = {path for _, path in operations}
    # the native API's runs and each adapter's entry point are described
    assert {"/v1/conversations/{id}/runs", "/agui", "/a2a"} <= paths, paths

    await page.goto(f"{server.url}/docs")
    await expect(page).to_have_url(f"{server.url}/docs/")
    await expect(page.locator("body")).to_have_attribute("data-ready", "docs")
    await expect(page.get_by_test_id("docs-error")).to_be_hidden()
    shown = page.get_by_test_id("docs-operation")
    await expect(shown).to_have_count(len(operations))
    rendered = sorted(tuple(pair) for pair in await shown.evaluate_all(
        "ops => ops.map(o => [o.dataset.method, o.dataset.path])"))
    assert rendered == operations
    runs = page.locator('[data-testid="docs-operation"][data-method="POST"]'
                        '[data-path="/v1/conversations/{id}/runs"]')
    await expect(runs).to_be_visible()
    await expect(runs).to_contain_text("/v1/conversations/")
    summary = document["paths"]["/v1/conversations/{id}/runs"]["post"].get("summary")
    if summary:
        await expect(runs).to_contain_text(summary)
    await expect(page.locator('[data-testid="docs-operation"][data-path="/agui"]')) \
        .to_have_count(len(document["paths"]["/agui"]))

    # the filter narrows the operations to the matching ones
    await page.get_by_test_id("docs-filter").fill("agui")
    await expect(page.locator('[data-testid="docs-operation"][data-path="/agui"]')) \
        .to_be_visible()
    await expect(runs).to_be_hidden()
