"""Issue 29: the agent card's caching headers (Cache-Control, ETag, Last-Modified) and 304s
for If-None-Match and If-Modified-Since."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from conftest import BASE, make_app

from checkflow.hosting import WorkflowHost

CARD = "/.well-known/agent-card.json"


def http_date(when: datetime) -> str:
    return format_datetime(when.astimezone(UTC), usegmt=True)


async def client_for(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE,
                             headers={"authorization": "Bearer alice"})


@pytest.fixture
async def http(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with await client_for(app) as client:
        yield client


async def test_the_card_has_cache_control_etag_and_a_stable_last_modified(
        http: httpx.AsyncClient) -> None:
    first, second = await http.get(CARD), await http.get(CARD)
    assert first.status_code == second.status_code == 200
    assert first.headers["cache-control"] == "public, max-age=300"
    assert first.headers["etag"] == second.headers["etag"]
    assert first.headers["last-modified"] == second.headers["last-modified"]
    modified = parsedate_to_datetime(first.headers["last-modified"])
    assert modified <= datetime.now(UTC)
    assert first.json()["name"]


async def test_if_none_match_answers_304_with_the_validators(http: httpx.AsyncClient) -> None:
    card = await http.get(CARD)
    again = await http.get(CARD, headers={"if-none-match": card.headers["etag"]})
    assert (again.status_code, again.content) == (304, b"")
    for name in ("etag", "cache-control", "last-modified"):
        assert again.headers[name] == card.headers[name]
    other = await http.get(CARD, headers={"if-none-match": 'W/"another"'})
    assert other.status_code == 200 and other.json() == card.json()


async def test_if_modified_since_answers_304_unless_the_card_is_newer(
        http: httpx.AsyncClient) -> None:
    card = await http.get(CARD)
    modified = parsedate_to_datetime(card.headers["last-modified"])
    for since in (card.headers["last-modified"], http_date(modified + timedelta(hours=1))):
        again = await http.get(CARD, headers={"if-modified-since": since})
        assert (again.status_code, again.content) == (304, b"")
        assert again.headers["etag"] == card.headers["etag"]
        assert again.headers["last-modified"] == card.headers["last-modified"]
    older = await http.get(CARD, headers={
        "if-modified-since": http_date(modified - timedelta(seconds=1))})
    assert older.status_code == 200 and older.json() == card.json()
    # a date that is not one is ignored (RFC 9110 13.1.3)
    garbage = await http.get(CARD, headers={"if-modified-since": "yesterday-ish"})
    assert garbage.status_code == 200


async def test_if_none_match_decides_alone_when_both_are_sent(http: httpx.AsyncClient) -> None:
    card = await http.get(CARD)
    both = await http.get(CARD, headers={"if-none-match": 'W/"stale"',
                                         "if-modified-since": card.headers["last-modified"]})
    assert both.status_code == 200


@pytest.mark.parametrize(("option", "header"), [(None, None),
                                                 ("no-cache", "no-cache"),
                                                 ("private, max-age=60", "private, max-age=60")])
async def test_cache_control_is_an_adapter_option(host: WorkflowHost, option: str | None,
                                                  header: str | None) -> None:
    async with await client_for(make_app(host, card_cache_control=option)) as http:
        card = await http.get(CARD)
    assert card.headers.get("cache-control") == header
    assert card.headers["etag"] and card.headers["last-modified"]


async def test_a_restarted_server_keeps_the_etag_and_moves_last_modified_forward(
        host: WorkflowHost, http: httpx.AsyncClient) -> None:
    before = await http.get(CARD)
    async with await client_for(make_app(host)) as restarted:
        after = await restarted.get(CARD)
        assert after.headers["etag"] == before.headers["etag"]
        assert parsedate_to_datetime(after.headers["last-modified"]) >= parsedate_to_datetime(
            before.headers["last-modified"])
        hit = await restarted.get(CARD, headers={"if-none-match": before.headers["etag"]})
        assert hit.status_code == 304
