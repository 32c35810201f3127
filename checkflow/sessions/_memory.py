"""``InMemorySessionStore``: sessions in a dict of encoded bytes, for tests and one process.

Stores the codec's bytes, never live objects, so a caller's later changes to a session never
leak into the store (the encoding is the copy). This module must never touch the disk.
"""

from __future__ import annotations

import threading

from checkflow import state
from checkflow.sessions._session import AgentSession
from checkflow.sessions._versions import check_expected_version, new_version

__all__ = ["InMemorySessionStore"]


class InMemorySessionStore:
    """A ``SessionStore`` in process memory with the same conflict rules as the durable ones."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[str, bytes]] = {}
        self._lock = threading.Lock()  # also safe when shared by several event loops

    async def get(self, session_id: str) -> AgentSession | None:
        """A fresh copy of the stored session, or ``None``."""
        with self._lock:
            item = self._items.get(session_id)
        if item is None:
            return None
        version, data = item
        session = _decode(data)
        session.version = version
        return session

    async def set(self, session: AgentSession, *, expected_version: str | None = None) -> str:
        """Store ``session`` if ``expected_version`` is ``None`` or current; return the version."""
        data = state.encode(session, path=f"session[{session.session_id!r}]")
        with self._lock:
            current = self._items.get(session.session_id)
            check_expected_version(
                session.session_id,
                expected_version=expected_version,
                actual_version=current[0] if current else None,
            )
            version = new_version()
            self._items[session.session_id] = (version, data)
        session.version = version
        return version

    async def delete(self, session_id: str) -> None:
        """Forget the session; deleting a missing one is not an error."""
        with self._lock:
            self._items.pop(session_id, None)


def _decode(data: bytes) -> AgentSession:
    session = state.decode(data)
    assert isinstance(session, AgentSession)
    return session
