"""The inspector's routes: its pages and files, and the read-only JSON its pages load.

Reads are here (``/inspector/api/...``); writes are not: the pages answer requests, branch
and cancel through the native API's own routes (``/v1/...``), with their checks (resume
tokens, 409s, principals). Conversation and snapshot ids are taken from the raw path, one
percent-encoded segment each, so an id holding ``/`` is never read as a route. This module
must never write to a store.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from checkflow.errors import InvalidConversationIdError
from checkflow.hosting import HttpError, json_response, page_limit, request_principal
from checkflow.inspector._assets import SECURITY_HEADERS, asset
from checkflow.inspector._reads import InspectorReader

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "ReaderFactory", "docs_routes", "inspector_routes"]

DEFAULT_PAGE = 50
MAX_PAGE = 1000
ReaderFactory = Callable[[], Awaitable[InspectorReader]]
_API = "/inspector/api/conversations/"


def _json(body: Any, status: int = 200) -> Response:
    response = json_response(body, status)
    response.headers.update({**SECURITY_HEADERS, "cache-control": "no-store"})
    return response


def _offset(cursor: str | None) -> int:
    """Cursors are offsets into the filtered, newest-first list (``"50"``)."""
    if not cursor:
        return 0
    if not cursor.isdigit():
        raise HttpError(400, "invalid_cursor", f"cursor {cursor!r} is not one this API gave")
    return int(cursor)


def _segments(request: Request) -> list[str]:
    """The percent-decoded segments after ``/inspector/api/conversations/`` in the raw path."""
    raw = request.scope.get("raw_path") or request.scope["path"].encode()
    path = raw.split(b"?", 1)[0].decode("ascii", "replace")
    rest = path[path.find(_API) + len(_API):] if _API in path else ""
    try:
        return [urllib.parse.unquote_to_bytes(s).decode("utf-8") for s in rest.split("/")]
    except UnicodeDecodeError as exc:
        raise InvalidConversationIdError(
            f"the id is not valid percent-encoded UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def inspector_routes(reader: ReaderFactory, meta: Callable[[Request], Awaitable[dict[str, Any]]],
                     *, every_principal: bool = False) -> list[BaseRoute]:
    """The pages, files and JSON reads under ``/inspector``.

    ``meta(request)`` answers ``api/meta`` (mode, whether writes are offered, the graph).
    ``every_principal``: ``?principal=`` picks whose conversation is read (the operator's
    view over a storage); otherwise it is always the request's own principal."""

    async def page(request: Request) -> Response:
        """The inspector's page (open it in a browser)."""
        if request.url.path.endswith("/inspector"):
            return RedirectResponse(request.url.path + "/", 308, headers=SECURITY_HEADERS)
        return asset(request, "index.html")

    async def assets(request: Request) -> Response:
        """A script, style or picture of the inspector's page."""
        return asset(request, str(request.path_params["name"]))

    def principal_of(request: Request) -> str | None:
        if every_principal:
            return request.query_params.get("principal") or None
        return request_principal(request)

    async def meta_route(request: Request) -> Response:
        """What is inspected: the mode, whether writes are offered, the workflow's graph."""
        return _json(await meta(request))

    async def conversations(request: Request) -> Response:
        """The principal's conversations, newest first, with status, head, lease and the
        protocol of the last turn (``?status=``, ``?limit=``, ``?cursor=``)."""
        limit = page_limit(request.query_params, default=DEFAULT_PAGE, maximum=MAX_PAGE)
        offset = _offset(request.query_params.get("cursor"))
        status = request.query_params.get("status") or None
        rows = await (await reader()).rows(request_principal(request))
        if status is not None:
            rows = [r for r in rows if r.status == status]
        page = rows[offset:offset + limit]
        more = offset + limit < len(rows)
        return _json({"conversations": [r.as_dict() for r in page],
                      "next_cursor": str(offset + limit) if more else None,
                      "total": len(rows)})

    async def conversation(request: Request) -> Response:
        """``{id}``: every snapshot, the head's requests, outputs and turns;
        ``{id}/snapshots/{snapshot_id}``: one snapshot's state and its superstep."""
        segments = _segments(request)
        if len(segments) not in (1, 3) or (len(segments) == 3 and segments[1] != "snapshots"):
            raise HttpError(404, "not_found", "no such inspector route")
        read = await reader()
        found, checkpoint, good = await read.conversation(segments[0], principal_of(request))
        if len(segments) == 1:
            return _json(read.detail(found, checkpoint, good))
        return _json(read.snapshot(checkpoint, good, segments[2]))

    async def orphans(request: Request) -> Response:
        """The checkpoints no conversation references (without ``--authenticate`` only)."""
        if not every_principal and request_principal(request) is not None:
            raise HttpError(403, "forbidden", "orphan checkpoints belong to no principal: "
                            "see them with checkflow inspect --storage or without "
                            "--authenticate")
        return _json({"orphans": await (await reader()).orphans()})

    return [
        Route("/inspector", page, methods=["GET"]),
        Route("/inspector/", page, methods=["GET"]),
        Route("/inspector/assets/{name}", assets, methods=["GET"]),
        Route("/inspector/api/meta", meta_route, methods=["GET"]),
        Route("/inspector/api/conversations", conversations, methods=["GET"]),
        Route("/inspector/api/conversations/{rest:path}", conversation, methods=["GET"]),
        Route("/inspector/api/orphans", orphans, methods=["GET"]),
    ]


def docs_routes() -> list[BaseRoute]:
    """``/docs``: the API reference page, drawn from ``/openapi.json`` in the browser."""

    async def page(request: Request) -> Response:
        """This API reference."""
        if request.url.path.endswith("/docs"):
            return RedirectResponse(request.url.path + "/", 308, headers=SECURITY_HEADERS)
        return asset(request, "docs.html")

    async def assets(request: Request) -> Response:
        """A script or style of this page."""
        return asset(request, str(request.path_params["name"]))

    return [Route("/docs", page, methods=["GET"]), Route("/docs/", page, methods=["GET"]),
            Route("/docs/{name}", assets, methods=["GET"])]
