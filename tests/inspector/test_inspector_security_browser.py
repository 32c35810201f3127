"""The inspector's pages in a real browser against hostile data, and against other principals.

Every value a server returns is untrusted: ``inspector_flows.py`` fills a conversation (whose
id is markup too) with strings that would set ``window.__xss`` if they ever became markup or
a URL. The pages must show each as text, under a Content-Security-Policy that forbids inline
script and eval. With ``--authenticate``, the pages see only the token's own conversations.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.inspector.inspector_flows import (
    ATTRIBUTE,
    CONVERSATION_ID,
    EXECUTOR_ID,
    KEY,
    NAME,
    PAYLOADS,
    SCRIPT,
    URL,
)
from tests.inspector.inspector_support import (
    BrowserLog,
    Process,
    Servers,
    conversation_url,
    detail,
    encode,
    expect,
    native_run,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

# what the DOM holds that data could have put there: script elements (with their source),
# images, any on* attribute, any link that is not one of the pages' own hash routes
_INERT = """() => ({
  xss: typeof window.__xss,
  scripts: [...document.querySelectorAll("script")].map(s => s.getAttribute("src")),
  inline: [...document.querySelectorAll("script")].filter(s => s.textContent.trim()).length,
  images: document.querySelectorAll("img, image, iframe, object, embed").length,
  handlers: [...document.querySelectorAll("*")].flatMap(e => [...e.attributes]
    .filter(a => a.name.toLowerCase().startsWith("on")).map(a => `${e.tagName} ${a.name}`)),
  links: [...document.querySelectorAll("[href], [src], [action], [formaction]")]
    .filter(e => !e.matches('link[rel="icon"][href="data:,"]'))  // "no favicon", not data
    .map(e => e.getAttribute("href") ?? e.getAttribute("src") ?? e.getAttribute("action")
         ?? e.getAttribute("formaction")),
})"""


def assert_strict_csp(header: str | None) -> None:
    assert header, "no Content-Security-Policy"
    policy = {d[0]: d[1:] for d in (part.split() for part in header.split(";")) if d}
    assert policy.get("default-src") == ["'none'"], header
    assert policy.get("script-src") == ["'self'"], header
    assert policy.get("style-src") == ["'self'"], header
    assert policy.get("base-uri") == ["'none'"] and policy.get("frame-ancestors") == ["'none'"]
    assert "'unsafe-inline'" not in header and "'unsafe-eval'" not in header, header


def as_text(value: str) -> list[str]:
    """How a string may show as text: as itself, or quoted as JSON (the state tree's way)."""
    return [value, json.dumps(value)]


async def assert_inert(page: Any, where: str) -> None:
    found = await page.evaluate(_INERT)
    assert found["xss"] == "undefined", f"{where}: window.__xss was set: {found}"
    assert found["inline"] == 0, f"{where}: an inline script: {found}"
    assert all(src and (src.startswith(("./", "assets/", "/inspector/assets/", "/docs/"))
                        or "/" not in src) for src in found["scripts"]), \
        f"{where}: a script from elsewhere: {found['scripts']}"
    assert found["images"] == 0, f"{where}: an image or a frame: {found}"
    assert found["handlers"] == [], f"{where}: event handler attributes: {found['handlers']}"
    for link in found["links"]:
        assert link.startswith(("#", "./", "assets/", "/inspector/assets/", "../", "/docs/")) \
            or (":" not in link and "/" not in link), f"{where}: a link from data: {link!r}"


async def assert_shows(locator: Any, value: str) -> None:
    """``value`` is in the element's text, literally (raw, or as the JSON the tree shows)."""
    await expect(locator.first).to_be_attached()
    text = "\n".join(await locator.all_text_contents())
    assert any(form in text for form in as_text(value)), f"{value!r} not shown in {text[:2000]!r}"


async def open_every_node(scope: Any) -> None:
    """Open every collapsed ``<details>`` under ``scope``, as a reader clicking through would
    (children are built when first opened); bounded, each opened once."""
    for _ in range(200):
        closed = scope.locator("details:not([open]) > summary")
        if not await closed.count():
            return
        await closed.first.click()
    raise AssertionError("the state tree kept growing closed nodes")


async def expand_values(scope: Any) -> None:
    """Show every long value whole (each "more" toggle clicked once)."""
    toggles = scope.get_by_role("button", name="more", exact=True)
    for _ in range(200):
        if not await toggles.count():
            return
        await toggles.first.click()
    raise AssertionError("the values kept growing toggles")


async def test_hostile_values_in_state_outputs_requests_and_ids_stay_text(
    servers: Servers, page: Any,
) -> None:
    server = servers.serve("inspector_flows:workflow")
    answer = await native_run(server, CONVERSATION_ID, {"message": ATTRIBUTE})
    assert answer["status"] == "awaiting_responses", answer
    shown = await detail(server, CONVERSATION_ID)
    dialogs: list[str] = []

    async def dismiss(dialog: Any) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        await dialog.dismiss()

    page.on("dialog", dismiss)
    documents: list[Any] = []
    page.on("response", lambda r: r.request.resource_type == "document" and documents.append(r))

    # the list: the id is the link's text, its href our own hash of the encoded id
    response = await page.goto(server.inspector)
    assert_strict_csp(response.headers.get("content-security-policy"))
    await expect(page.locator("body")).to_have_attribute("data-ready", "list")
    row = page.get_by_test_id("conversation-row")
    await expect(row).to_have_count(1)
    await expect(row).to_have_attribute("data-conversation-id", CONVERSATION_ID)
    link = row.get_by_role("link").first
    await expect(link).to_have_text(CONVERSATION_ID)
    await expect(link).to_have_attribute("href", f"#/c/{encode(CONVERSATION_ID)}")
    await assert_inert(page, "the list")

    await link.click()
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    assert page.url == conversation_url(server, CONVERSATION_ID)  # percent-encoded
    await assert_shows(page.get_by_test_id("conversation-header"), CONVERSATION_ID)
    outputs = page.get_by_test_id("outputs")
    for payload in PAYLOADS:
        await assert_shows(outputs, payload)
    pending = page.get_by_test_id("pending-request")
    await expect(pending).to_have_count(1)
    await open_every_node(pending)
    for payload in PAYLOADS:
        await assert_shows(pending, payload)
    ids = await page.get_by_test_id("executor-node").evaluate_all(
        "ns => ns.map(n => n.getAttribute('data-executor-id'))")
    assert sorted(ids) == sorted(["hoard", EXECUTOR_ID]), ids
    await assert_shows(page.get_by_test_id("workflow-graph"), EXECUTOR_ID)
    await assert_shows(page.get_by_test_id("workflow-name"), NAME)
    await assert_inert(page, "the conversation")

    # each snapshot, its state opened all the way down, and its diff against the parent
    state = page.get_by_test_id("state-view")
    for snapshot in shown["snapshots"]:
        target = page.locator(
            f'[data-testid="snapshot-node"][data-snapshot-id="{snapshot["snapshot_id"]}"]')
        await target.click()
        await expect(target).to_have_attribute("data-selected", "true")
        await open_every_node(state)
        await assert_inert(page, f"snapshot {snapshot['metadata']['superstep']}")
    # the head holds them all: the keys as keys, the values as values
    await assert_shows(state.get_by_test_id("state-key"), KEY)
    for payload in (SCRIPT, URL, ATTRIBUTE):
        await assert_shows(state.get_by_test_id("state-value"), payload)

    diff = page.get_by_test_id("diff-view")
    await page.get_by_test_id("diff-against").select_option(shown["snapshots"][0]["snapshot_id"])
    await expect(diff.get_by_test_id("diff-entry").first).to_be_attached()
    paths = await diff.get_by_test_id("diff-entry").evaluate_all(
        "es => es.map(e => e.getAttribute('data-path'))")
    assert f"executor_states.{EXECUTOR_ID}" in paths, paths  # an id in a path: an attribute
    await expand_values(diff)
    for value in (KEY, SCRIPT, ATTRIBUTE, URL):
        await assert_shows(diff, json.dumps(value))
    await assert_inert(page, "the diff")

    # the API reference, and the conversation page opened afresh by its (encoded) URL
    response = await page.goto(f"{server.url}/docs/")
    assert_strict_csp(response.headers.get("content-security-policy"))
    await expect(page.locator("body")).to_have_attribute("data-ready", "docs")
    await expect(page.get_by_test_id("docs-operation").first).to_be_attached()
    await assert_inert(page, "the docs")
    response = await page.goto(conversation_url(server, CONVERSATION_ID))
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    await assert_inert(page, "the conversation, reloaded")

    assert dialogs == []
    for document in documents:
        assert_strict_csp(document.headers.get("content-security-policy"))
    assert await page.evaluate("typeof window.__xss") == "undefined"


async def test_every_page_asset_and_read_carries_a_strict_content_security_policy(
    servers: Servers,
) -> None:
    server = servers.serve("inspector_flows:workflow")
    await native_run(server, CONVERSATION_ID, {"message": "hello"})
    async with httpx.AsyncClient(timeout=60, follow_redirects=False) as http:
        page = await http.get(server.inspector)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        scripts = [f"{server.inspector}{src.removeprefix('./')}" if not src.startswith("/")
                   else f"{server.url}{src}" for src in _sources(page.text)]
        assert scripts, page.text[:2000]
        for url in [server.inspector, f"{server.url}/docs/", f"{server.inspector}api/meta",
                    f"{server.inspector}api/conversations",
                    f"{server.inspector}api/conversations/{encode(CONVERSATION_ID)}",
                    *scripts]:
            response = await http.get(url)
            assert response.status_code == 200, (url, response.status_code, response.text)
            assert_strict_csp(response.headers.get("content-security-policy"))
            assert response.headers.get("x-content-type-options") == "nosniff", url
        redirect = await http.get(f"{server.url}/inspector")
        assert redirect.status_code in (301, 307, 308)
        assert redirect.headers["location"].endswith("/inspector/")


def _sources(html: str) -> list[str]:
    import re

    return re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', html)


# -- principals --------------------------------------------------------------------------------


async def _two_principals(servers: Servers) -> Process:
    server = servers.serve("e2e_flows:workflow", "--authenticate", "e2e_flows:authenticate")
    assert (await native_run(server, "alice-notes", {"message": "a"}, "alice"))["status"] \
        == "idle"
    assert (await native_run(server, "bob-notes", {"message": "b"}, "bob"))["status"] == "idle"
    return server


async def test_a_token_shows_only_its_principal_s_conversations(
    servers: Servers, page: Any, browser_log: BrowserLog,
) -> None:
    server = await _two_principals(servers)
    # without a token the reads answer 401 (the pages then ask for one); orphans are 403 to
    # any principal: Chromium logs each refused fetch
    browser_log.expect(r"status of 40[13]")
    await page.goto(server.inspector)
    token = page.get_by_test_id("token-input")
    await expect(token).to_be_visible()
    await token.fill("alice")
    await page.get_by_test_id("token-save").click()
    await expect(page.locator("body")).to_have_attribute("data-ready", "list")
    rows = page.get_by_test_id("conversation-row")
    await expect(rows).to_have_count(1)
    await expect(rows).to_have_attribute("data-conversation-id", "alice-notes")
    await expect(page.get_by_test_id("conversation-list")).not_to_contain_text("bob-notes")

    await rows.get_by_role("link").first.click()
    await expect(page.locator("body")).to_have_attribute("data-ready", "conversation")
    await expect(page.get_by_test_id("conversation-status")).to_have_text("idle")
    await expect(page.get_by_test_id("outputs").locator("li")).to_have_text(["A"])


async def test_another_principal_s_conversation_opened_directly_is_not_found(
    servers: Servers, page: Any, browser_log: BrowserLog,
) -> None:
    server = await _two_principals(servers)
    browser_log.expect(r"status of 40[134]")
    await page.goto(server.inspector)
    await page.get_by_test_id("token-input").fill("alice")
    await page.get_by_test_id("token-save").click()
    await expect(page.get_by_test_id("conversation-row")).to_have_count(1)

    await page.goto(conversation_url(server, "bob-notes"))
    banner = page.get_by_test_id("error-banner")
    await expect(banner).to_be_visible()
    await expect(banner).to_contain_text("no conversation 'bob-notes'")
    await expect(page.get_by_test_id("snapshot-node")).to_have_count(0)
    # the same read through the API, with bob's own token, finds it: it exists, for bob
    assert (await detail(server, "bob-notes", "bob"))["status"] == "idle"
    async with httpx.AsyncClient(timeout=60) as http:
        refused = await http.get(f"{server.inspector}api/conversations/bob-notes",
                                 headers={"authorization": "Bearer alice"})
    assert refused.status_code == 404, refused.text
