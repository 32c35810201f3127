"""The inspector's files (pages, scripts, styles) and the headers every page is sent with.

The files ship in the package (``static/``) and are read once, on first use, into memory:
a name is looked up among them, never joined to a path, so no request reaches another file.
Pages carry a Content-Security-Policy that allows only this origin's own scripts and styles
(no inline script, no ``eval``), so a value from state that a bug let through as markup still
could not run. This module must never read a store.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "asset", "asset_names"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}
"""Sent with every inspector answer, pages and JSON alike."""

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}


@functools.cache
def _files() -> dict[str, tuple[bytes, str, str]]:
    """``name -> (content, media type, etag)`` of every file in ``static/``."""
    found = {}
    for entry in resources.files(__package__).joinpath("static").iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1] if "." in entry.name else ""
        if entry.is_file() and suffix in _TYPES:
            content = entry.read_bytes()
            etag = '"' + hashlib.sha256(content).hexdigest()[:16] + '"'
            found[entry.name] = (content, _TYPES[suffix], etag)
    return found


def asset_names() -> list[str]:
    """The files the inspector serves, sorted."""
    return sorted(_files())


def asset(request: Request, name: str) -> Response:
    """The file ``name`` (404 when there is none), revalidated by ETag on every load."""
    found = _files().get(name)
    if found is None:
        return Response(f"no file {name!r}", 404, headers=SECURITY_HEADERS,
                        media_type="text/plain")
    content, media_type, etag = found
    headers = {**SECURITY_HEADERS, "etag": etag, "cache-control": "no-cache"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(content, headers=headers, media_type=media_type)
