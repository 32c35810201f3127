"""HTTP plumbing for the native API and adapters: bounded JSON bodies, errors, SSE frames.

Bodies are read as a stream and refused (413) as soon as they pass the limit, so a 10 MB
upload never sits in memory; the media type is checked first (415). Every error answer has the
shape ``{"error": {"code", "message", ...}}``; the mapping from checkflow errors to statuses
lives here and nowhere else. This module must never run a workflow.
"""

from __future__ import annotations

import logging
import math
from typing import Any, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from checkflow.errors import (
    CheckpointConflictError,
    CheckpointInUseError,
    ConversationBusyError,
    ConversationNotFoundError,
    GraphSignatureMismatchError,
    InvalidMessageError,
    InvalidResponseError,
    SnapshotNotFoundError,
    StaleResumeTokenError,
)
from checkflow.hosting._views import error_body

__all__ = [
    "HttpError",
    "describe_error",
    "error_response",
    "json_response",
    "read_json",
    "sse_frame",
]

T = TypeVar("T")
_log = logging.getLogger("checkflow.hosting")
_encoder = msgspec.json.Encoder()
_json_decoder = msgspec.json.Decoder()


class HttpError(Exception):
    """An answer other than 2xx decided by the HTTP layer itself (bad body, media type, auth)."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """``body`` encoded once with the shared msgspec encoder (no per-response JSON setup)."""
    return Response(_encoder.encode(body), status, headers, media_type="application/json")


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and
                                            media.endswith("+json"))


async def read_json(request: Request, type: type[T], *, max_body_bytes: int) -> T:
    """The request body decoded as ``type``: 415, 413, 400 (malformed) or 422 (schema) else."""
    content_type = request.headers.get("content-type", "")
    if not _is_json(content_type):
        raise HttpError(415, "unsupported_media_type",
                        f"send application/json, not {content_type or 'no content type'!r}")
    too_large = HttpError(413, "body_too_large",
                          f"the body is larger than {max_body_bytes} bytes")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body_bytes:
            raise too_large
        chunks.append(chunk)
    try:
        parsed = _json_decoder.decode(b"".join(chunks))
    except msgspec.DecodeError as exc:
        raise HttpError(400, "malformed_json", f"the body is not valid JSON: {exc}") from None
    try:
        return msgspec.convert(parsed, type, strict=True)
    except msgspec.ValidationError as exc:
        raise HttpError(422, "invalid_request", str(exc)) from None


def _mapped(exc: BaseException) -> tuple[int, str, dict[str, Any], dict[str, str]]:
    """(status, code, details, headers) for an error a handler let through."""
    if isinstance(exc, HttpError):
        return exc.status, exc.code, exc.details, {}
    if isinstance(exc, ConversationBusyError):
        retry = str(max(1, math.ceil(exc.retry_after)))
        return 409, "conversation_busy", {}, {"Retry-After": retry}
    if isinstance(exc, (CheckpointConflictError, CheckpointInUseError)):
        return 409, "conversation_busy", {}, {"Retry-After": "1"}
    if isinstance(exc, StaleResumeTokenError):
        return 409, "stale_resume_token", {"expected": exc.expected, "actual": exc.actual}, {}
    if isinstance(exc, GraphSignatureMismatchError):
        details = {"expected_graph_signature_hash": exc.expected,
                   "actual_graph_signature_hash": exc.actual}
        return 409, "graph_signature_mismatch", details, {}
    if isinstance(exc, ConversationNotFoundError):
        return 404, "conversation_not_found", {}, {}
    if isinstance(exc, SnapshotNotFoundError):
        return 404, "snapshot_not_found", {"snapshot_id": exc.snapshot_id}, {}
    if isinstance(exc, InvalidMessageError):
        return 422, "invalid_message", {"accepted_types": exc.accepted_types}, {}
    if isinstance(exc, InvalidResponseError):
        return 422, "invalid_response", {"request_id": exc.request_id}, {}
    raise exc


def describe_error(exc: BaseException) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, error body, headers) for ``exc``; unknown errors are logged and become 500."""
    try:
        status, code, details, headers = _mapped(exc)
    except Exception:
        _log.exception("unhandled error while serving a request")
        return 500, error_body("internal_error", "internal server error"), {}
    return status, error_body(code, str(exc), **details), headers


def error_response(exc: BaseException) -> Response:
    """The JSON error answer for ``exc``."""
    status, body, headers = describe_error(exc)
    return json_response(body, status, headers)


def sse_frame(event: str, data: Any) -> bytes:
    """One server-sent event: ``event: <name>`` and its JSON ``data`` line."""
    return b"event: " + event.encode() + b"\ndata: " + _encoder.encode(data) + b"\n\n"
