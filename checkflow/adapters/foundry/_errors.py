"""OpenAI-shaped errors: ``{"error": {"message", "type", "param", "code"}}`` and their statuses.

Every refusal the Responses routes make is a ``ResponsesError`` raised before anything runs,
so a refused request never creates a session or a checkpoint. This module must never decide
what is wrong with a request; it only says how a refusal looks on the wire.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ResponsesError", "error_body", "param_from_validation"]

_PATH = re.compile(r"- at `\$(?P<path>[^`]*)`")


class ResponsesError(Exception):
    """A refusal in the Responses protocol's own terms: status, message, type, param, code."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        type: str = "invalid_request_error",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.type = type
        self.headers = dict(headers or {})


def error_body(
    message: str, *, type: str = "invalid_request_error", param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """The OpenAI error envelope; every key is present, ``None`` where it does not apply."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def param_from_validation(message: str) -> str | None:
    """The request field a msgspec validation message points at (``$.input[0].role`` ->
    ``input[0].role``), or ``None`` when it names the whole body."""
    found = _PATH.search(message)
    if found is None:
        return None
    return found.group("path").lstrip(".") or None
