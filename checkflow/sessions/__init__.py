"""Agent sessions and where they are kept: ``AgentSession``, ``SessionStore`` and two stores.

Depends only on ``checkflow.state`` (and the shared file helpers); the Cosmos DB store lives
in ``checkflow.storage.cosmos``.
"""

from checkflow.sessions._file import FileSessionStore
from checkflow.sessions._memory import InMemorySessionStore
from checkflow.sessions._protocol import SessionStore
from checkflow.sessions._session import AgentSession

__all__ = ["AgentSession", "FileSessionStore", "InMemorySessionStore", "SessionStore"]
