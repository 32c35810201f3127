"""The inspector's browser tests: one headless Chromium for the session, a fresh context a test.

The browser is the distribution's Chromium (``/usr/bin/chromium``, Debian's ``chromium``
package, or ``$CHECKFLOW_CHROMIUM``), driven through Playwright's async API; Playwright never
downloads one here (``make browser`` installs the package). Without Playwright or Chromium the
tests skip, naming what is missing, unless ``CHECKFLOW_REQUIRE_BROWSER=1`` (CI), when they fail.

The browser lives on the session's event loop (the suite's default loop scope is the function,
and a browser per test would cost seconds each), so these tests and their async fixtures run on
``loop_scope="session"`` (each test module sets ``pytestmark``). ``page`` fails its test on any
console error or uncaught page error (Content-Security-Policy violations are console errors)
the test did not announce with ``browser_log.expect(pattern)``, and saves a screenshot of the
page under ``test-output/inspector/<test name>.png`` whatever the outcome.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.inspector.inspector_support import (
    TIMEOUT_MS,
    BrowserLog,
    Gates,
    Servers,
    screenshot_path,
)

REQUIRE_ENV = "CHECKFLOW_REQUIRE_BROWSER"
CHROMIUM_ENV = "CHECKFLOW_CHROMIUM"
DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} [{REQUIRE_ENV}=1]", pytrace=False)
    pytest.skip(f"{reason}; the inspector's browser tests are skipped")


def _chromium() -> str:
    path = os.environ.get(CHROMIUM_ENV) or DEFAULT_CHROMIUM
    found = shutil.which(path)
    if found is None:
        _unavailable(f"Chromium not found at {path} (`make browser` installs Debian's "
                     f"chromium package; {CHROMIUM_ENV} names another binary)")
    return str(found)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Any]:
    """The session's headless Chromium, with a profile folder of its own, removed at the end."""
    try:
        from playwright.async_api import async_playwright, expect
    except ImportError:
        _unavailable("Playwright is not installed (pip install -e '.[dev]')")
    executable = _chromium()
    expect.set_options(timeout=TIMEOUT_MS)
    profile = tempfile.mkdtemp(prefix="checkflow-chromium-")
    # launch() makes a fresh temporary profile folder (--user-data-dir is refused there: only
    # launch_persistent_context, a single context, takes one); its driver makes it under its
    # TMPDIR, so it lives in ours: nothing of the user's Chromium is read, nothing outlives us
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = profile
    try:
        playwright = await async_playwright().start()
    finally:
        if saved is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = saved
    try:
        try:
            launched = await playwright.chromium.launch(
                executable_path=executable, args=CHROMIUM_ARGS, headless=True,
                timeout=120_000)
        except Exception as exc:  # a broken binary, a missing shared library, ...
            _unavailable(f"Chromium at {executable} did not start: "
                         f"{str(exc).strip().splitlines()[0]}")
        try:
            yield launched
        finally:
            await launched.close()
    finally:
        await playwright.stop()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def browser_log() -> BrowserLog:
    """The page's console errors and page errors; ``expect(pattern)`` announces some."""
    return BrowserLog()


def _console(log: BrowserLog, message: Any) -> None:
    if message.type != "error":
        return
    where = message.location.get("url") or "?"
    log.errors.append(f"console error: {message.text} (at {where})")


@pytest_asyncio.fixture(loop_scope="session")
async def page(browser: Any, browser_log: BrowserLog,
               request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """A page in a new context; screenshotted at teardown, failing on unannounced errors."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    page.on("console", lambda message: _console(browser_log, message))
    page.on("pageerror", lambda error: browser_log.errors.append(f"page error: {error}"))
    request.node._browser_log = browser_log
    try:
        yield page
    finally:
        target = screenshot_path(request.node.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            await page.screenshot(path=str(target), full_page=True, timeout=TIMEOUT_MS)
        except Exception as exc:  # a crashed page: the test's own outcome says more
            warnings.warn(f"no screenshot for {request.node.name}: {exc}", stacklevel=1)
        await context.close()
    # errors that arrived after the test's body (those before failed its call already)
    late = [e for e in browser_log.unexpected() if e not in getattr(request.node,
                                                                     "_browser_reported", ())]
    if late:
        pytest.fail("the page logged errors:\n" + "\n".join(late), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test whose page logged an unannounced error fails, even when its asserts held."""
    result = yield
    log: BrowserLog | None = getattr(item, "_browser_log", None)
    if log is not None and (unexpected := log.unexpected()):
        item._browser_reported = list(unexpected)  # type: ignore[attr-defined]
        pytest.fail("the page logged errors:\n" + "\n".join(unexpected), pytrace=False)
    return result


@pytest.fixture
def gates(tmp_path: Path) -> Gates:
    folder = tmp_path / "gates"
    folder.mkdir()
    return Gates(folder)


@pytest.fixture
def servers(tmp_path: Path, gates: Gates) -> Iterator[Servers]:
    """Servers started by the test (``file:`` storage in tmp_path), stopped after it."""
    started = Servers(tmp_path / "store", gates.folder)
    yield started
    started.stop()
