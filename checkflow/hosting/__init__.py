"""Hosting: serve workflows and agents to many conversations, over a Starlette app.

``WorkflowHost`` and ``AgentHost`` need only the core; ``create_app`` needs the ``hosting``
extra (starlette, uvicorn) and imports it when called.
"""

from checkflow.hosting._agent_host import AgentHost
from checkflow.hosting._factory import Adapter, Authenticate, create_app, request_principal
from checkflow.hosting._results import ConversationState, HostedRunResult, ResumeToken
from checkflow.hosting._workflow_host import HostedRunStream, WorkflowHost

__all__ = [
    "Adapter",
    "AgentHost",
    "Authenticate",
    "ConversationState",
    "HostedRunResult",
    "HostedRunStream",
    "ResumeToken",
    "WorkflowHost",
    "create_app",
    "request_principal",
]
