"""``InMemorySessionStore``: sessions in a dict of encoded bytes, for tests and one process.

Stores the codec's bytes, never live objects, so a caller's later changes to a session never
leak into the store (the encoding is the copy). This module must never touch the disk.
"""

from __future__ import annotations

import threading

from checkflow import state
from checkflow.sessions._session import AgentSession
from checkflow.sessions._versions import (
    check_expected_version,
    check_write_condition,
    new_version,
)

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

    async def set(
        self, session: AgentSession, *, expected_version: str | None = None, create: bool = False,
        durable: bool = True,
    ) -> str:
        """Store ``session`` if the write's condition holds (see ``SessionStore``); the version.

        ``durable`` changes nothing here: memory is never durable.
        """
        check_write_condition(expected_version, create)
        data = state.encode(session, path=f"session[{session.session_id!r}]")
        with self._lock:
            check_expected_version(
                session.session_id,
                expected_version=expected_version,
                actual_version=self._version_of(session.session_id),
                create=create,
            )
            version = new_version()
            self._items[session.session_id] = (version, data)
        session.version = version
        return version

    async def delete(self, session_id: str, *, expected_version: str | None = None) -> None:
        """Forget the session (only at ``expected_version`` when given); missing is no error."""
        with self._lock:
            check_expected_version(
                session_id,
                expected_version=expected_version,
                actual_version=self._version_of(session_id),
            )
            self._items.pop(session_id, None)

    async def list_session_ids(self) -> list[str]:
        """Every stored session id, sorted."""
        with self._lock:
            return sorted(self._items)

    def _version_of(self, session_id: str) -> str | None:
        current = self._items.get(session_id)
        return current[0] if current is not None else None


def _decode(data: bytes) -> AgentSession:
    session = state.decode(data)
    assert isinstance(session, AgentSession)
    return session
