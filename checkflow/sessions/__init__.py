"""Agent sessions and where they are kept: ``AgentSession``, ``SessionStore`` and two stores.

Depends only on ``checkflow.state`` (and the shared file helpers); the Cosmos DB store lives
in ``checkflow.storage.cosmos``. ``check_write_condition`` is here for store implementations
outside this package (that Cosmos DB store, third-party ones): every store refuses the same
contradictory write the same way.
"""

from checkflow.sessions._file import FileSessionStore
from checkflow.sessions._memory import InMemorySessionStore
from checkflow.sessions._protocol import SessionStore
from checkflow.sessions._session import AgentSession
from checkflow.sessions._versions import check_write_condition

__all__ = [
    "AgentSession",
    "FileSessionStore",
    "InMemorySessionStore",
    "SessionStore",
    "check_write_condition",
]
