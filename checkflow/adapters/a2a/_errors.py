"""A2A's own shape for the bodies the app refuses before any route runs.

The app's ``BodyGuard`` refuses a body that is too large, too slow, too deeply nested or not
JSON before the SDK parses it; this module says how that refusal looks to an A2A client: a
JSON-RPC error object on the JSON-RPC route (HTTP 200, as the SDK itself answers a payload
that is too large, so the client raises the typed error), and a ``google.rpc.Status`` payload
with the refusal's HTTP status on the REST routes (400 for nesting, as for InvalidParams).
A timed-out body keeps its 408 on both.
This module must never decide what is wrong with a request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import A2AError, InvalidParamsError, InvalidRequestError
from starlette.requests import Request
from starlette.responses import Response

from checkflow.adapters.a2a._metadata import error_data
from checkflow.hosting import HttpError, json_response

__all__ = ["refusal_handler"]


def _a2a_error(exc: HttpError) -> A2AError:
    data = error_data(reason=exc.code, **exc.details)
    if exc.code == "too_deeply_nested":  # well-formed JSON whose params cannot be taken
        return InvalidParamsError(message=exc.message, data=data)
    return InvalidRequestError(message=exc.message, data=data)


def refusal_handler(rest_prefix: str) -> Callable[[Request, Exception], Awaitable[Response]]:
    """The ``HttpError`` handler of an adapter whose REST routes live under ``rest_prefix``."""

    async def refuse(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HttpError)
        error = _a2a_error(exc)
        path = request.url.path
        if path == rest_prefix or path.startswith(rest_prefix + "/"):
            status = 400 if exc.status == 422 else exc.status  # A2A's REST says 400 there
            payload = build_rest_error_payload(error)
            payload["error"]["code"] = status
            return json_response(payload, status)
        status = 408 if exc.status == 408 else 200
        return json_response(build_error_response(None, error), status)

    return refuse
