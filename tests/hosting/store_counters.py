"""Counting wrappers for a host's two stores: every call, by name and in order.

``CountingSessionStore`` and ``CountingCheckpointStorage`` delegate every method to the real
store they wrap and append one ``Call`` to a shared ``CallLog`` per call, so a test can say
how often a turn read or wrote what, and in which order (a write after the commit shows up
after the ``commit_snapshot``). A loaded checkpoint is attached to the wrapper, not to the
inner storage, so the commits it makes are counted too.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from checkflow.checkpoints import Checkpoint, CheckpointStorage
from checkflow.sessions import AgentSession, SessionStore

__all__ = ["Call", "CallLog", "CountingCheckpointStorage", "CountingSessionStore",
           "counting_stores"]

SESSION_WRITES = frozenset({"set", "delete"})
CHECKPOINT_WRITES = frozenset({"commit_snapshot", "delete", "prune"})


@dataclass(frozen=True, slots=True)
class Call:
    """One store call: which store (``sessions`` or ``checkpoints``), the method and its key
    (a session id or a checkpoint id), and, for a session write, the conversation id the
    written session says it holds (``None`` for adapter records)."""

    store: str
    method: str
    key: str | None
    conversation_id: str | None = None

    @property
    def is_write(self) -> bool:
        writes = SESSION_WRITES if self.store == "sessions" else CHECKPOINT_WRITES
        return self.method in writes

    def __str__(self) -> str:
        held = f" (conversation {self.conversation_id!r})" if self.conversation_id else ""
        return f"{self.store}.{self.method}({self.key}){held}"


@dataclass
class CallLog:
    """Every call of both stores in the order they were made."""

    calls: list[Call] = field(default_factory=list)

    def clear(self) -> None:
        self.calls.clear()

    def count(self, store: str) -> Counter[str]:
        return Counter(c.method for c in self.calls if c.store == store)

    def render(self) -> str:
        return "\n".join(f"  {n:2}. {c}" for n, c in enumerate(self.calls, 1))


def _key(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    first = args[0] if args else next(iter(kwargs.values()), None)
    if isinstance(first, AgentSession):
        return first.session_id
    if isinstance(first, Checkpoint):
        return first.checkpoint_id
    return first if isinstance(first, str) else None


def _held_conversation(args: tuple[Any, ...]) -> str | None:
    """The conversation id a written session names in its identity, if it has one."""
    if not args or not isinstance(args[0], AgentSession):
        return None
    identity = args[0].state.get("conversation")
    value = identity.get("conversation_id") if isinstance(identity, dict) else None
    return value if isinstance(value, str) else None


class _Counting:
    """Delegates every attribute to ``inner``; a call of a public method is logged first."""

    _store = ""

    def __init__(self, inner: Any, log: CallLog) -> None:
        self._inner, self._log = inner, log

    def _record(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._log.calls.append(Call(self._store, method, _key(method, args, kwargs),
                                    _held_conversation(args) if method == "set" else None))

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name.startswith("_") or not callable(value):
            return value
        if inspect.iscoroutinefunction(value):
            @functools.wraps(value)
            async def counted_async(*args: Any, **kwargs: Any) -> Any:
                self._record(name, args, kwargs)
                return await self._after(name, await value(*args, **kwargs))
            return counted_async

        @functools.wraps(value)
        def counted(*args: Any, **kwargs: Any) -> Any:
            self._record(name, args, kwargs)
            return value(*args, **kwargs)
        return counted

    async def _after(self, method: str, result: Any) -> Any:
        return result


class CountingSessionStore(_Counting):
    """A ``SessionStore`` that logs every call to the one it wraps."""

    _store = "sessions"

    def __init__(self, inner: SessionStore, log: CallLog) -> None:
        super().__init__(inner, log)


class CountingCheckpointStorage(_Counting):
    """A ``CheckpointStorage`` that logs every call to the one it wraps; a checkpoint it
    loads commits through it."""

    _store = "checkpoints"

    def __init__(self, inner: CheckpointStorage, log: CallLog) -> None:
        super().__init__(inner, log)

    @property
    def format(self) -> Any:
        return self._inner.format

    async def _after(self, method: str, result: Any) -> Any:
        if method == "load" and isinstance(result, Checkpoint):
            result.checkpoint_storage = self  # type: ignore[assignment]
        return result


def counting_stores(sessions: SessionStore, storage: CheckpointStorage
                    ) -> tuple[CallLog, Any, Any]:
    """One log and the two wrappers writing to it."""
    log = CallLog()
    return log, CountingSessionStore(sessions, log), CountingCheckpointStorage(storage, log)



class TurnTripsError(AssertionError):
    """A turn made more store trips than issue 27 allows; the message has every count and
    the calls in order."""


@dataclass(frozen=True, slots=True)
class Trips:
    """What one turn did, read off its ``CallLog`` for the conversation it ran in."""

    loads: int
    lease_read: Call | None
    other_reads: list[Call]
    late_writes: list[Call]
    log: CallLog

    @classmethod
    def of(cls, log: CallLog, conversation_id: str) -> Trips:
        """Find the conversation's own session (the one whose writes name ``conversation_id``),
        its lease (the first write of it) and the read that lease made (the last read of it
        before), and every other write after the turn's first commit."""
        calls = log.calls
        own = {c.key for c in calls if c.store == "sessions" and c.method == "set"
               and c.conversation_id == conversation_id}
        assert own, (f"no session write names conversation {conversation_id!r}: the "
                     f"counters saw\n{log.render()}")
        lease = next(i for i, c in enumerate(calls) if c.store == "sessions" and c.key in own
                     and c.is_write)
        lease_read = next((c for c in reversed(calls[:lease]) if c.store == "sessions"
                           and c.method == "get" and c.key in own), None)
        reads = [c for c in calls if c.store == "sessions" and not c.is_write
                 and c is not lease_read]
        commits = [i for i, c in enumerate(calls) if c.method == "commit_snapshot"]
        assert commits, f"the turn committed nothing: the counters saw\n{log.render()}"
        late = [c for c in calls[commits[0] + 1:] if c.is_write
                and c.method != "commit_snapshot"
                and not (c.store == "sessions" and c.key in own)]
        return cls(log.count("checkpoints")["load"], lease_read, reads, late, log)

    def check(self, *, loads: int, what: str) -> None:
        """``TurnTripsError`` unless the turn loaded the checkpoint ``loads`` times, read the
        session store at most once besides its lease, and wrote nothing after its first
        commit but its own session."""
        wrong = []
        if self.loads != loads:
            wrong.append(f"checkpoint loads: {self.loads} (want {loads})")
        if len(self.other_reads) > 1:
            wrong.append(f"session reads besides the lease's: {len(self.other_reads)} "
                         f"(want <= 1): {', '.join(map(str, self.other_reads))}")
        if self.late_writes:
            wrong.append("writes after the commit that are not the session's own: "
                         f"{', '.join(map(str, self.late_writes))}")
        if wrong:
            counts = {store: dict(sorted(self.log.count(store).items()))
                      for store in ("sessions", "checkpoints")}
            raise TurnTripsError(f"{what}: " + "; ".join(wrong) + f"\ncalls by name: {counts}"
                                 f"\nin order:\n{self.log.render()}")
