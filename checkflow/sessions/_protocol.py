"""The ``SessionStore`` contract every session backend implements.

Only the protocol lives here; backends live in their own modules (memory, file) or in
``checkflow.storage`` (Cosmos DB). This module must never do I/O.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from checkflow.sessions._session import AgentSession

__all__ = ["SessionStore"]


@runtime_checkable
class SessionStore(Protocol):
    """Where agent sessions are kept between runs, with optimistic concurrency.

    ``set`` returns the new opaque version and records it on ``session.version``;
    ``expected_version=None`` writes unconditionally, any other value must equal the stored
    version or ``SessionConflictError`` is raised (a missing session's version is ``None``).
    ``create=True`` writes only if no session with that id exists (so exactly one of several
    racing creators wins), else ``SessionConflictError`` with ``expected_version=None`` and
    the current version; it cannot be combined with ``expected_version`` (``ValueError``).
    ``delete`` with ``expected_version`` removes the session only at that version (else
    ``SessionConflictError``); without, it removes whatever is there, and a missing session
    is no error. ``get`` returns a fresh copy with ``version`` set.

    ``durable=False`` says the caller can afford to lose this write in a crash (the lease a
    host records before a run: a crash loses it together with the run it guarded), so a store
    may skip the sync that makes it survive one; the write is still atomic and its condition
    still checked, and a later durable write makes it durable too. A create-only write is
    always durable (it is what tells a restarted host that a conversation was begun). Stores
    whose every write is durable ignore it.
    """

    async def get(self, session_id: str) -> AgentSession | None:
        """A fresh copy of the stored session with ``version`` set, or ``None``."""
        ...

    async def set(
        self, session: AgentSession, *, expected_version: str | None = None, create: bool = False,
        durable: bool = True,
    ) -> str:
        """Store ``session`` if the write's condition holds; the new version."""
        ...

    async def delete(self, session_id: str, *, expected_version: str | None = None) -> None:
        """Remove the session (only at ``expected_version`` when given)."""
        ...

    async def list_session_ids(self) -> list[str]:
        """Every stored session id, sorted (for operators and listings: it reads them all)."""
        ...
