"""An in-memory stand-in for ``host.records(namespace)``, exactly the seam's interface.

Used only until tests can reach a real host's records; it keeps the seam's semantics:
principal-scoped keys, a new version per write, ``SessionConflictError`` on a stale
``expected_version`` or on ``create=True`` over an existing key.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import msgspec

from checkflow.errors import SessionConflictError


@dataclass(frozen=True)
class FakeStoredRecord:
    value: Any
    version: str


class FakeRecordStore:
    def __init__(self) -> None:
        self._data: dict[tuple[str | None, str], tuple[bytes, str]] = {}
        self._versions = itertools.count(1)

    async def get(self, key: str, *, principal: str | None = None) -> FakeStoredRecord | None:
        found = self._data.get((principal, key))
        if found is None:
            return None
        return FakeStoredRecord(msgspec.json.decode(found[0]), found[1])

    async def put(self, key: str, value: Any, *, principal: str | None = None,
                  expected_version: str | None = None, create: bool = False) -> str:
        current = self._data.get((principal, key))
        actual = current[1] if current else None
        if (create and current is not None) or (
                expected_version is not None and expected_version != actual):
            raise SessionConflictError(key, expected_version=expected_version,
                                       actual_version=actual)
        version = str(next(self._versions))
        self._data[(principal, key)] = (msgspec.json.encode(value), version)
        return version

    async def delete(self, key: str, *, principal: str | None = None) -> None:
        self._data.pop((principal, key), None)
