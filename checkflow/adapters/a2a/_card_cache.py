"""HTTP caching of the agent card: ``Cache-Control``, ``ETag``, ``Last-Modified`` and 304s.

The SDK's card route sends the ``ETag`` (a hash of the card served) and the
``Cache-Control`` it is given, and answers ``If-None-Match`` with 304. This module adds
``Last-Modified`` and ``If-Modified-Since``. The card cannot change while a server runs (it
is built from the workflow, or the card given, when the app starts), so its Last-Modified
is the moment the app built its routes, to the second: stable across the requests of one
server, later after a restart (a cache then fetches the card again once; the ETag, equal
across restarts for an equal card, still answers 304). ``If-None-Match``, when sent,
decides alone (RFC 9110 13.1.3). This module never builds the card itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["DEFAULT_CARD_CACHE_CONTROL", "CardCaching"]

DEFAULT_CARD_CACHE_CONTROL = "public, max-age=300"
"""A card is public discovery data that rarely changes: caches may keep it five minutes,
then revalidate it (a 304 when it is unchanged)."""

Endpoint = Callable[[Request], Awaitable[Response]]

_KEPT = ("etag", "cache-control", "last-modified")  # what a 304 repeats (RFC 9110 15.4.5)


def _http_date(when: datetime) -> str:
    return format_datetime(when.astimezone(UTC), usegmt=True)


def _since(header: str | None) -> datetime | None:
    """An ``If-Modified-Since`` date; ``None`` when absent or not a date (then ignored)."""
    if not header:
        return None
    try:
        when = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class CardCaching:
    """Adds ``Last-Modified`` (``last_modified``, to the second) to the card's answers and
    answers ``If-Modified-Since`` with 304 when the card has not changed since."""

    def __init__(self, last_modified: datetime | None = None) -> None:
        when = last_modified or datetime.now(UTC)
        self.last_modified = when.astimezone(UTC).replace(microsecond=0)
        self.header = _http_date(self.last_modified)

    def wrap(self, endpoint: Endpoint) -> Endpoint:
        """The card endpoint with Last-Modified and If-Modified-Since."""

        async def card(request: Request) -> Response:
            response = await endpoint(request)
            response.headers["Last-Modified"] = self.header
            since = _since(request.headers.get("if-modified-since"))
            if (response.status_code == 200 and "if-none-match" not in request.headers
                    and since is not None and self.last_modified <= since):
                kept = {k: v for k, v in response.headers.items() if k in _KEPT}
                return Response(status_code=304, headers=kept)
            return response

        return card
