"""The adapter's durable memory of one AG-UI thread: its transcript and the interrupts it issued.

Kept as one record per (principal, threadId) in the host's adapter records
(``host.records("agui")``), so it lives in the host's session store (memory, file or Cosmos)
and every process serving the thread shares it. The transcript's message ids are the ids the
thread has *seen*: resent history is matched against them and never fed to the workflow again.
This module must never load a checkpoint or a session, and never decide what a run does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from checkflow.errors import RecordTooLargeError, SessionConflictError
from checkflow.hosting import RecordStore

__all__ = ["NAMESPACE", "ThreadRecord"]

NAMESPACE = "agui"
"""The ``host.records`` namespace of AG-UI thread records."""

_ATTEMPTS = 5


@dataclass(slots=True)
class ThreadRecord:
    """What the adapter remembers of a thread between runs (and across processes)."""

    thread_id: str
    principal: str | None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)
    version: str | None = None
    size: int = 0
    """The record's encoded size when it was loaded (what the host's bound is checked on)."""

    @property
    def seen(self) -> set[str]:
        """The ids of every message the thread has taken in or produced."""
        return {str(m.get("id")) for m in self.transcript}

    @classmethod
    async def load(
        cls, store: RecordStore, thread_id: str, principal: str | None
    ) -> ThreadRecord:
        """The thread's record, or an empty one for a thread this adapter has not served."""
        stored = await store.get(thread_id, principal=principal)
        if stored is None:
            return cls(thread_id, principal)
        value = stored.value if isinstance(stored.value, Mapping) else {}
        return cls(
            thread_id,
            principal,
            transcript=[dict(m) for m in value.get("transcript", ())],
            issued=[str(i) for i in value.get("issued", ())],
            version=stored.version,
            size=store.size_of(stored.value) if store.max_bytes is not None else 0,
        )

    def check_room(self, store: RecordStore, incoming: int) -> None:
        """Refuse a run (``RecordTooLargeError``) before it starts when the thread's record,
        grown by ``incoming`` bytes of new input, would pass the host's bound: the record is
        written after the run commits, and a refusal then would leave the thread unrecorded."""
        limit = store.max_bytes
        if limit is not None and self.size + incoming > limit:
            raise RecordTooLargeError(store.namespace, self.thread_id,
                                      size=self.size + incoming, limit=limit)

    def merged(
        self, messages: Iterable[Mapping[str, Any]], issued: Sequence[str]
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """The transcript and issued ids with ``messages`` and ``issued`` added (no repeats)."""
        transcript = list(self.transcript)
        ids = self.seen
        for message in messages:
            if str(message.get("id")) not in ids:
                ids.add(str(message.get("id")))
                transcript.append(dict(message))
        known = list(self.issued)
        known.extend(i for i in issued if i not in set(known))
        return transcript, known

    async def record(
        self,
        store: RecordStore,
        messages: Sequence[Mapping[str, Any]],
        issued: Sequence[str],
    ) -> None:
        """Add what a successful run took in and produced; merges with a concurrent writer."""
        current = self
        for _ in range(_ATTEMPTS):
            transcript, known = current.merged(messages, issued)
            value = {"transcript": transcript, "issued": known}
            try:
                self.version = await store.put(
                    self.thread_id, value, principal=self.principal,
                    expected_version=current.version, create=current.version is None,
                )
            except SessionConflictError:
                current = await ThreadRecord.load(store, self.thread_id, self.principal)
                continue
            self.transcript, self.issued = transcript, known
            return
        raise SessionConflictError(
            f"agui:{self.thread_id}", expected_version=current.version, actual_version=None
        )
