"""Mounting adapters: one sub-app per adapter under its prefixes, and no two prefixes overlap.

A Starlette ``Mount`` strips its prefix and never matches the bare prefix itself (``/agui``
without a slash), which protocol endpoints need; a ``PrefixMount`` matches the prefix and
everything below it and hands the request to the adapter's sub-app unchanged, full path
included, so an adapter's routes are written with the paths clients use. This module must
never know any protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.datastructures import URLPath
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import ASGIApp, Receive, Scope, Send

from checkflow.errors import AdapterConflictError

__all__ = ["PrefixMount", "check_prefixes", "covers"]


def covers(prefix: str, path: str) -> bool:
    """Whether ``path`` is ``prefix`` itself or below it (``/a`` covers ``/a/b``, not ``/ab``)."""
    stem = prefix.rstrip("/")
    return path in (prefix, stem) or path.startswith(stem + "/")


class PrefixMount(BaseRoute):
    """Routes every path under ``prefixes`` to ``app`` (an adapter's sub-app), path unchanged."""

    def __init__(self, prefixes: Sequence[str], app: ASGIApp, name: str) -> None:
        self.prefixes = tuple(prefixes)
        self.app = app
        self.name = name

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] in ("http", "websocket") and any(
                covers(p, scope["path"]) for p in self.prefixes):
            return Match.FULL, {}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def check_prefixes(claims: Sequence[tuple[str, Sequence[str]]]) -> None:
    """Refuse two owners whose prefixes overlap: ``AdapterConflictError`` naming both.

    ``claims`` are ``(owner name, prefixes)`` pairs, the native API's among them.
    """
    for i, (first, mine) in enumerate(claims):
        for p in mine:
            if not p.startswith("/"):
                raise ValueError(f"{first}: prefix {p!r} must start with '/'")
            if p.rstrip("/") == "":
                raise AdapterConflictError(first, "every other route",
                                           "the prefix '/' would take every path")
        for second, theirs in claims[i + 1:]:
            for p in mine:
                for q in theirs:
                    if covers(p, q) or covers(q, p):
                        raise AdapterConflictError(
                            first, second, f"prefix {p!r} overlaps prefix {q!r}")


def check_routes_within(owner: str, prefixes: Sequence[str], paths: Sequence[str]) -> None:
    """Every route of ``owner`` lies under one of its prefixes (else it could never be reached)."""
    for path in paths:
        if not any(covers(p, path) for p in prefixes):
            raise ValueError(
                f"{owner}: route {path!r} is outside its declared prefixes {list(prefixes)}")
