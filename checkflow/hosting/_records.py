"""``RecordStore``: durable, principal-scoped key/value records for an adapter's own state.

Adapters must never load sessions themselves, yet some protocols keep objects of their own
beside a conversation (A2A tasks, Responses response objects) that every process sharing the
stores must see. A record is one session in the host's ``SessionStore`` (memory, file or
Cosmos alike), named by a hash of (namespace, principal, key) so that equal keys of two
principals never meet; versions give the same optimistic concurrency as sessions. This module
must never know what an adapter stores.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from checkflow import state as codec
from checkflow.errors import RecordTooLargeError, SessionError
from checkflow.sessions import AgentSession, SessionStore

__all__ = ["DEFAULT_MAX_RECORD_BYTES", "RecordStore", "StoredRecord"]

DEFAULT_MAX_RECORD_BYTES = 8 * 1024 * 1024
"""The default bound on one record's encoded value (``RecordTooLargeError`` past it)."""

_VALUE: Final = "value"
_IDENTITY: Final = "record"


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A record's value and its opaque version (pass it back as ``expected_version``)."""

    value: Any
    version: str


class RecordStore:
    """One namespace of records (e.g. ``host.records("a2a")``) over a ``SessionStore``.

    ``put(..., expected_version=v)`` writes only over version ``v`` and ``create=True`` only
    when the key is new, else ``SessionConflictError``; values are anything the state codec
    encodes, up to ``max_bytes`` encoded (``RecordTooLargeError`` past it, nothing written;
    ``None``: unbounded).
    """

    def __init__(self, store: SessionStore, namespace: str, *,
                 max_bytes: int | None = DEFAULT_MAX_RECORD_BYTES) -> None:
        if not namespace:
            raise ValueError("a record namespace must not be empty")
        self._store = store
        self.namespace = namespace
        self.max_bytes = max_bytes

    def size_of(self, value: Any) -> int:
        """How many bytes ``value`` takes encoded, as ``put`` measures it against the bound."""
        return len(codec.encode(value))

    def _session_id(self, key: str, principal: str | None) -> str:
        name = msgspec.json.encode([self.namespace, principal, key])
        return f"record-{hashlib.blake2b(name, digest_size=16).hexdigest()}"

    async def get(self, key: str, *, principal: str | None = None) -> StoredRecord | None:
        """The record stored under ``key`` for ``principal``, or ``None``."""
        session = await self._store.get(self._session_id(key, principal))
        if session is None or session.version is None:
            return None
        return StoredRecord(session.state.get(_VALUE), session.version)

    async def put(
        self,
        key: str,
        value: Any,
        *,
        principal: str | None = None,
        expected_version: str | None = None,
        create: bool = False,
    ) -> str:
        """Store ``value`` under ``key`` if the write's condition holds; the new version."""
        if self.max_bytes is not None:
            size = self.size_of(value)
            if size > self.max_bytes:
                raise RecordTooLargeError(self.namespace, key, size=size, limit=self.max_bytes)
        identity = {"namespace": self.namespace, "principal": principal, "key": key}
        session = AgentSession(self._session_id(key, principal),
                               {_IDENTITY: identity, _VALUE: value})
        return await self._store.set(session, expected_version=expected_version, create=create)

    async def keys(self) -> list[tuple[str | None, str]]:
        """Every ``(principal, key)`` of this namespace (reads every session: for an
        adapter's start-up, not a hot path)."""
        found: list[tuple[str | None, str]] = []
        for session_id in await self._store.list_session_ids():
            if not session_id.startswith("record-"):
                continue
            try:
                session = await self._store.get(session_id)
            except SessionError:
                continue  # unreadable here (damage, or types this process lacks): skip it
            identity = None if session is None else session.state.get(_IDENTITY)
            if (isinstance(identity, dict) and identity.get("namespace") == self.namespace
                    and isinstance(identity.get("key"), str)):
                principal = identity.get("principal")
                found.append((principal if isinstance(principal, str) else None,
                              identity["key"]))
        return found

    async def delete(
        self, key: str, *, principal: str | None = None, expected_version: str | None = None
    ) -> None:
        """Remove the record (only at ``expected_version`` when given); missing is fine."""
        await self._store.delete(self._session_id(key, principal),
                                 expected_version=expected_version)
