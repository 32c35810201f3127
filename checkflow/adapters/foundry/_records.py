"""Stored responses: what each response id means, kept in the host's adapter records.

A ``ResponseRecord`` names the host conversation a response ran in and the snapshot it ended
at (so ``previous_response_id`` can continue or branch from exactly there), the principal,
status, output, input items and the events log a finished stream is replayed from. Records
live in ``host.records("foundry")``: principal-scoped, durable in the host's session store and
shared by every process using it. Writes are compare-and-swap on the record's version.
This module must never call the host's runs or read checkpoints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

__all__ = ["NAMESPACE", "RecordStore", "ResponseRecord", "ResponseStore", "StoredRecord"]

NAMESPACE = "foundry"
"""The ``host.records`` namespace this adapter keeps its responses in."""

_KEY = "response:"


class StoredRecord(Protocol):
    """What ``RecordStore.get`` hands back: the value and the version to write against."""

    @property
    def value(self) -> Any: ...

    @property
    def version(self) -> str: ...


class RecordStore(Protocol):
    """The hosting seam's durable, principal-scoped key/value records (``host.records``)."""

    async def get(self, key: str, *, principal: str | None = None) -> StoredRecord | None: ...

    async def put(self, key: str, value: Any, *, principal: str | None = None,
                  expected_version: str | None = None, create: bool = False) -> str: ...

    async def delete(self, key: str, *, principal: str | None = None) -> None: ...


class ResponseRecord(msgspec.Struct, kw_only=True):
    """One response as stored: where it ran, where it ended and what it showed."""

    id: str
    conversation_id: str
    principal: str | None
    status: str
    created_at: int
    model: str
    snapshot_id: str | None = None
    checkpoint_id: str | None = None
    completed_at: int | None = None
    previous_response_id: str | None = None
    instructions: str | None = None
    metadata: dict[str, str] = {}
    store: bool = True
    background: bool = False
    output: list[dict[str, Any]] = []
    pending_calls: list[str] = []
    input_items: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    error: dict[str, Any] | None = None
    run_started: str | None = None  # the run's first event time: tells its events apart

    @property
    def finished(self) -> bool:
        return self.status not in ("queued", "in_progress")


def _key(response_id: str) -> str:
    return _KEY + response_id


class ResponseStore:
    """Response records on top of a ``RecordStore``: load, create, replace, delete."""

    def __init__(self, records: RecordStore) -> None:
        self._records = records

    async def load(
        self, response_id: str, *, principal: str | None
    ) -> tuple[ResponseRecord, str] | None:
        """The record and its version, or ``None`` when this principal has no such response."""
        stored = await self._records.get(_key(response_id), principal=principal)
        if stored is None:
            return None
        value = stored.value
        if not isinstance(value, Mapping):
            raise TypeError(f"the record of response {response_id} is not a mapping")
        return msgspec.convert(value, ResponseRecord), stored.version

    async def create(self, record: ResponseRecord) -> str:
        """Store a new record (``SessionConflictError`` if the id exists); its version."""
        return await self._records.put(_key(record.id), msgspec.to_builtins(record),
                                       principal=record.principal, create=True)

    async def replace(self, record: ResponseRecord, version: str) -> str:
        """Overwrite the record written at ``version`` (``SessionConflictError`` if stale)."""
        return await self._records.put(_key(record.id), msgspec.to_builtins(record),
                                       principal=record.principal, expected_version=version)

    async def delete(self, response_id: str, *, principal: str | None) -> None:
        await self._records.delete(_key(response_id), principal=principal)
