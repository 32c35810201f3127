"""HTTP plumbing for the native API and adapters: bounded JSON bodies, errors, SSE frames.

Bodies are read as a stream and refused (413) as soon as they pass the limit, so a 10 MB
upload never sits in memory; the media type is checked first (415). Every error answer has the
shape ``{"error": {"code", "message", ...}}``; the mapping from checkflow errors to statuses
lives here and nowhere else. This module must never run a workflow.
"""

from __future__ import annotations

import errno
import logging
import math
from typing import Any, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from checkflow.errors import (
    CheckpointConflictError,
    CheckpointInUseError,
    CheckpointLostError,
    CommitOutcomeUnknownError,
    ConversationBusyError,
    ConversationLimitError,
    ConversationNotFoundError,
    CorruptCheckpointError,
    CorruptSessionError,
    GraphSignatureMismatchError,
    InvalidConversationIdError,
    InvalidMessageError,
    InvalidResponseError,
    RecordTooLargeError,
    RequestNotPendingError,
    SharedStateWriteError,
    SnapshotNotFoundError,
    StaleResumeTokenError,
    StateTooLargeError,
    StorageError,
    StorageFullError,
    StorageReadOnlyError,
    TurnInProgressError,
)
from checkflow.hosting._bounds import BODY_KEY, is_json_media, nests_deeper
from checkflow.hosting._views import error_body

__all__ = [
    "MAX_JSON_DEPTH",
    "HttpError",
    "convert_body",
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


MAX_JSON_DEPTH = 64
"""How deeply a request body may nest (objects and arrays) before it is refused with 422."""


async def read_json(
    request: Request,
    type: type[T],
    *,
    max_body_bytes: int | None = None,
    max_depth: int = MAX_JSON_DEPTH,
) -> T:
    """The request body decoded as ``type``, or an ``HttpError`` naming what was wrong.

    415 for another media type, 413 past ``max_body_bytes`` (the app's limit when ``None``;
    the body is refused while it streams in), 400 for malformed JSON, 422 ``too_deeply_nested``
    past ``max_depth`` levels, 422 ``invalid_request`` when it does not fit ``type`` (the
    message names the field). ``type`` may be a msgspec Struct, a dataclass, a TypedDict, any
    msgspec-convertible annotation, or a pydantic model (validated by pydantic).
    """
    content_type = request.headers.get("content-type", "")
    if not is_json_media(content_type):
        raise HttpError(415, "unsupported_media_type",
                        f"send application/json, not {content_type or 'no content type'!r}")
    limit = max_body_bytes if max_body_bytes is not None else _app_limit(request)
    body = request.scope.get(BODY_KEY)  # read and bounded by the app's BodyGuard
    if body is None or len(body) > limit:
        body = await _read_bounded(request, limit)
    try:
        parsed = _json_decoder.decode(body)
    except RecursionError:
        raise _too_deep_error(max_depth) from None
    except msgspec.DecodeError as exc:
        raise HttpError(400, "malformed_json", f"the body is not valid JSON: {exc}") from None
    if isinstance(parsed, (dict, list)) and nests_deeper(body, max_depth):
        raise _too_deep_error(max_depth)
    return convert_body(parsed, type)


async def _read_bounded(request: Request, limit: int) -> bytes:
    """The body, refused (413) as soon as it passes ``limit`` (outside a guarded app)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> HttpError:
    return HttpError(413, "body_too_large", f"the body is larger than {limit} bytes")


def _too_deep_error(max_depth: int) -> HttpError:
    return HttpError(422, "too_deeply_nested",
                     f"the body nests deeper than {max_depth} levels", max_depth=max_depth)


def convert_body(parsed: Any, type: type[T]) -> T:
    """``parsed`` JSON as ``type`` (see ``read_json``); 422 naming the field if it does not fit."""
    validate = getattr(type, "model_validate", None)
    if callable(validate):  # a pydantic model: its own validation and error locations
        try:
            return validate(parsed)  # type: ignore[no-any-return]
        except ValueError as exc:
            errors = getattr(exc, "errors", None)
            first = errors()[0] if callable(errors) and errors() else None
            if first is None:
                raise HttpError(422, "invalid_request", str(exc)) from None
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise HttpError(422, "invalid_request", f"{first.get('msg')} - at `$.{where}`",
                            field=where) from None
    try:
        return msgspec.convert(parsed, type, strict=True)
    except msgspec.ValidationError as exc:
        raise HttpError(422, "invalid_request", str(exc)) from None


def _app_limit(request: Request) -> int:
    limit = getattr(request.app.state, "max_body_bytes", None) if "app" in request.scope else None
    return int(limit) if limit is not None else 1_048_576


def _mapped(exc: BaseException) -> tuple[int, str, dict[str, Any], dict[str, str]]:
    """(status, code, details, headers) for an error a handler let through."""
    if isinstance(exc, HttpError):
        return exc.status, exc.code, exc.details, {}
    if isinstance(exc, RequestNotPendingError):
        return 409, "already_answered", {"request_ids": exc.request_ids}, {}
    if isinstance(exc, TurnInProgressError):
        retry = str(max(1, math.ceil(exc.retry_after)))
        return 409, "turn_in_progress", {"turn_id": exc.turn_id}, {"Retry-After": retry}
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
    if isinstance(exc, InvalidConversationIdError):
        if exc.too_long:
            return 414, "conversation_id_too_long", {}, {}
        return 400, "invalid_conversation_id", {}, {}
    if isinstance(exc, ConversationLimitError):
        limits = {"limit": exc.limit, "maximum": exc.maximum, "actual": exc.actual}
        return 409, f"{exc.limit}_limit", limits, {}
    if isinstance(exc, InvalidMessageError):
        return 422, "invalid_message", {"accepted_types": exc.accepted_types,
                                        **_where(exc.field, exc.reason)}, {}
    if isinstance(exc, SharedStateWriteError):
        return 422, "invalid_state", {"key": exc.key, **_where(exc.field, exc.reason)}, {}
    if isinstance(exc, CheckpointLostError):  # before corruption: a loss, never "not found"
        lost = {"checkpoint_id": exc.checkpoint_id,
                "expected_head_snapshot_id": exc.expected_head_snapshot_id,
                "actual_head_snapshot_id": exc.actual_head_snapshot_id}
        _log.error("acknowledged history lost: %s", exc)
        return 500, "checkpoint_lost", lost, {}
    if isinstance(exc, RecordTooLargeError):
        return 409, "record_too_large", {"size": exc.size, "limit": exc.limit}, {}
    if isinstance(exc, StateTooLargeError):
        return 422, "state_too_large", {"size": exc.size, "limit": exc.limit}, {}
    storage = _storage_fault(exc)
    if storage is not None:
        _log.warning("storage fault while serving a request: %s: %s", type(exc).__name__, exc)
        return 503, storage[0], storage[1], {"Retry-After": "1"}
    if isinstance(exc, InvalidResponseError):
        return 422, "invalid_response", {"request_id": exc.request_id,
                                         **_where(exc.field, exc.reason)}, {}
    raise exc


def _where(field: str | None, reason: str | None) -> dict[str, str]:
    """``field``/``reason`` of a 422, when the conversion said where it failed."""
    return {k: v for k, v in (("field", field), ("reason", reason)) if v is not None}


_OS_FAULTS = {errno.ENOSPC: "storage_full", errno.EDQUOT: "storage_full",
              errno.EROFS: "storage_read_only"}


def _storage_fault(exc: BaseException) -> tuple[str, dict[str, Any]] | None:
    """(code, details) when ``exc`` is a fault of the stores, never the client's."""
    if isinstance(exc, CorruptCheckpointError):
        return "checkpoint_corrupt", {"source": exc.source}
    if isinstance(exc, CorruptSessionError):
        return "session_corrupt", {"source": exc.source}
    if isinstance(exc, StorageFullError):
        return "storage_full", {}
    if isinstance(exc, StorageReadOnlyError):
        return "storage_read_only", {}
    if isinstance(exc, (StorageError, CommitOutcomeUnknownError)):
        return "storage_unavailable", {}
    if isinstance(exc, OSError):
        return _OS_FAULTS.get(exc.errno or 0, "storage_unavailable"), {}
    return None


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
