"""Answers to pending requests: validate, convert to the declared type, queue for delivery.

Every id is checked before any answer is applied, so a bad batch changes nothing. Values are
converted with ``msgspec.convert(value, response_type, strict=True)`` (pydantic models through
``model_validate``, ``from_dict`` classes through their own constructor; ``Any`` unchecked).
``RequestCancelled()`` withdraws a request and reaches the requester only if its response
handler accepts it. This module never commits.
"""

from __future__ import annotations

import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from checkflow.errors import InvalidResponseError
from checkflow.workflows._events import RequestCancelledEvent, WorkflowEvent
from checkflow.workflows._results import PendingRequest, RequestCancelled
from checkflow.workflows._runstate import RunState
from checkflow.workflows._typing import type_name
from checkflow.workflows._validation import convert_value, validation_detail

if TYPE_CHECKING:
    from checkflow.workflows._workflow import Workflow

__all__ = ["accept_responses", "convert_response"]


def convert_response(request: PendingRequest, value: Any) -> Any:
    """``value`` as an instance of the request's ``response_type``, or InvalidResponseError."""
    target = request.response_type
    if target is typing.Any or type(value) is target:
        return value
    try:
        return convert_value(value, target)
    except TypeError as exc:  # a type msgspec cannot convert to: accept instances only
        if isinstance(target, type) and isinstance(value, target):
            return value
        raise _mismatch(request, exc) from exc
    except Exception as exc:  # msgspec's, pydantic's or a from_dict's own refusal
        raise _mismatch(request, exc) from exc


def _check(workflow: Workflow, request: PendingRequest, value: Any) -> None:
    """The requesting executor's own check of an answer (``Executor.check_response``)."""
    executor = workflow.plan.spec(request.source_executor_id).executor
    try:
        executor.check_response(request.data, value)
    except ValueError as exc:
        if isinstance(exc, InvalidResponseError):
            raise
        reason = str(exc)
        raise InvalidResponseError(
            f"the response to request {request.request_id!r} was refused: {reason}",
            request_id=request.request_id, reason=reason) from exc


def _mismatch(request: PendingRequest, exc: BaseException) -> InvalidResponseError:
    field, reason = validation_detail(exc)
    where = f" at {field}" if field else ""
    return InvalidResponseError(
        f"the response to request {request.request_id!r} must be "
        f"{type_name(request.response_type)}: {reason}{where}",
        request_id=request.request_id, field=field, reason=reason,
    )


async def accept_responses(
    workflow: Workflow,
    run: RunState,
    responses: Mapping[str, Any],
    emit: Callable[[WorkflowEvent], Awaitable[None]],
) -> dict[str, Any]:
    """Queue a delivery per answer and drop the answered requests; returns the accepted
    (converted) answers by request id."""
    unknown = [rid for rid in responses if rid not in run.requests]
    if unknown:
        raise InvalidResponseError(
            f"no pending request with id {unknown[0]!r} (pending: {sorted(run.requests)})",
            request_id=unknown[0])
    converted = {
        rid: value if isinstance(value, RequestCancelled)
        else convert_response(run.requests[rid], value)
        for rid, value in responses.items()
    }
    for rid, value in converted.items():
        if not isinstance(value, RequestCancelled):
            _check(workflow, run.requests[rid], value)
    for rid, value in converted.items():
        request = run.requests.pop(rid)
        spec = workflow.plan.spec(request.source_executor_id)
        if isinstance(value, RequestCancelled):
            delivered = spec.find_response_handler(request.data, value) is not None
            await emit(RequestCancelledEvent(rid, request.source_executor_id, delivered))
            if not delivered:
                continue
        run.deliveries.append({
            "kind": "response",
            "target": request.source_executor_id,
            "request_id": rid,
            "request": request.data,
            "response": value,
        })
    return converted
