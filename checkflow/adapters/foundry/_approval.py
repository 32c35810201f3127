"""Which pauses are approvals: shown as ``mcp_approval_request`` items, answered yes or no.

A request is approval-shaped when its answer is a yes/no (``response_type=bool``, or a stored
request whose answer schema is ``{"type": "boolean"}``), or when the workflow asks with an
explicit ``ApprovalRequest`` (answered with a ``bool`` too). Every other pause stays a
``request_info`` function call (an agent's tool calls are shown by ``_pending``). This module
must never call the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checkflow.hosting import pending_view
from checkflow.state import register_state_type
from checkflow.workflows import PendingRequest

__all__ = ["ApprovalRequest", "is_approval"]


@register_state_type(type_id="checkflow.foundry.ApprovalRequest")
@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """An explicit request for approval: ``ctx.request_info(ApprovalRequest("deploy?"),
    response_type=bool)``. Over Responses it is an ``mcp_approval_request`` whose
    ``arguments`` carry ``description`` and ``details``; the answer is the ``approve``
    boolean of an ``mcp_approval_response``."""

    description: str
    details: dict[str, Any] = field(default_factory=dict)


def is_approval(request: PendingRequest) -> bool:
    """Whether ``request`` is shown as an approval rather than a function call."""
    if isinstance(request.data, ApprovalRequest) or request.response_type is bool:
        return True
    return bool(pending_view(request)["response_schema"] == {"type": "boolean"})
