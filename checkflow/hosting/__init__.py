"""Hosting: serve workflows and agents to many conversations, and the seam adapters stand on.

``WorkflowHost`` and ``AgentHost`` (both ``Host``s) need only the core. ``create_app`` and
the adapter toolkit (``read_json``, ``sse_response``, ``error_response``, ...) need the
``hosting`` extra (starlette, uvicorn); the toolkit names are imported from here on first
use, with an error naming the extra if it is missing. Adapters use only the names exported
here, never a private module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from checkflow._extras import requires_extra
from checkflow.hosting._adapter import Adapter
from checkflow.hosting._agent_host import AgentHost, AgentRunStream
from checkflow.hosting._factory import Authenticate, create_app, request_principal
from checkflow.hosting._inspect import (
    checkpoint_export,
    checkpoint_summary,
    inspect_state,
    snapshot_detail,
)
from checkflow.hosting._keys import current_conversation_id
from checkflow.hosting._lookup import ConversationHead, conversation_head
from checkflow.hosting._operate import (
    HostedConversation,
    find_orphan_checkpoints,
    hosted_conversation,
    list_hosted_conversations,
    recover_conversation,
    unlock_conversation,
)
from checkflow.hosting._protocol import Host, HostDescription, RunOptions
from checkflow.hosting._records import RecordStore, StoredRecord
from checkflow.hosting._results import ConversationState, HostedRunResult, ResumeToken
from checkflow.hosting._runs import HostedRun
from checkflow.hosting._turn import ReplayedTurn, Turn
from checkflow.hosting._turns import TurnOrigin, TurnRecord, lineage_turns
from checkflow.hosting._views import (
    error_body,
    inspect_metadata,
    jsonable,
    pending_view,
    response_schema,
    run_view,
    snapshot_summary,
)
from checkflow.hosting._workflow_host import HostedRunStream, WorkflowHost

if TYPE_CHECKING:
    from checkflow.hosting._app import NATIVE_EXCEPTION_HANDLERS
    from checkflow.hosting._bounds import BodyLimits
    from checkflow.hosting._http import (
        MAX_JSON_DEPTH,
        HttpError,
        convert_body,
        describe_error,
        error_response,
        json_response,
        read_json,
    )
    from checkflow.hosting._native_pages import page_limit
    from checkflow.hosting._sse import ServerSentEvent, sse_response

__all__ = [
    "MAX_JSON_DEPTH",
    "NATIVE_EXCEPTION_HANDLERS",
    "Adapter",
    "AgentHost",
    "AgentRunStream",
    "Authenticate",
    "BodyLimits",
    "ConversationHead",
    "ConversationState",
    "Host",
    "HostDescription",
    "HostedConversation",
    "HostedRun",
    "HostedRunResult",
    "HostedRunStream",
    "HttpError",
    "RecordStore",
    "ReplayedTurn",
    "ResumeToken",
    "RunOptions",
    "ServerSentEvent",
    "StoredRecord",
    "Turn",
    "TurnOrigin",
    "TurnRecord",
    "WorkflowHost",
    "checkpoint_export",
    "checkpoint_summary",
    "conversation_head",
    "convert_body",
    "create_app",
    "current_conversation_id",
    "describe_error",
    "error_body",
    "error_response",
    "find_orphan_checkpoints",
    "hosted_conversation",
    "inspect_metadata",
    "inspect_state",
    "json_response",
    "jsonable",
    "lineage_turns",
    "list_hosted_conversations",
    "page_limit",
    "pending_view",
    "read_json",
    "recover_conversation",
    "request_principal",
    "response_schema",
    "run_view",
    "snapshot_detail",
    "snapshot_summary",
    "sse_response",
    "unlock_conversation",
]

_NEEDS_STARLETTE = {
    "NATIVE_EXCEPTION_HANDLERS": "_app",
    "BodyLimits": "_bounds",
    "MAX_JSON_DEPTH": "_http",
    "HttpError": "_http",
    "convert_body": "_http",
    "describe_error": "_http",
    "error_response": "_http",
    "json_response": "_http",
    "page_limit": "_native_pages",
    "read_json": "_http",
    "ServerSentEvent": "_sse",
    "sse_response": "_sse",
}


def __getattr__(name: str) -> Any:
    """The toolkit names that need starlette, imported on first use (PEP 562)."""
    module = _NEEDS_STARLETTE.get(name)
    if module is None:
        raise AttributeError(f"module 'checkflow.hosting' has no attribute {name!r}")
    with requires_extra("hosting", f"checkflow.hosting.{name}"):
        value = getattr(importlib.import_module(f"checkflow.hosting.{module}"), name)
    globals()[name] = value
    return value
