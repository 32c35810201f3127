"""What a hosted turn writes to its session store, and which of those writes must be durable.

A turn writes its session twice: the lease before the run (not synced to disk: a crash loses
it together with the run it guarded; a brand-new conversation's first write is create-only
and durable), and the outcome after it (durable: it names the good head the answer reports).
"""

from __future__ import annotations

from checkflow.hosting import WorkflowHost
from checkflow.hosting._keys import ConversationKey
from checkflow.sessions import AgentSession, InMemorySessionStore
from tests.hosting.hosting_flows import build


class RecordingSessions(InMemorySessionStore):
    """An in-memory store that records each write's kind and whether it asked for a sync."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[str, bool, bool]] = []

    async def set(self, session: AgentSession, *, expected_version: str | None = None,
                  create: bool = False, durable: bool = True) -> str:
        kind = "create" if create else "lease" if "lease" in session.state else "outcome"
        self.writes.append((kind, create, durable))
        return await super().set(session, expected_version=expected_version, create=create,
                                 durable=durable)


async def test_a_turn_writes_its_lease_unsynced_and_its_outcome_durably() -> None:
    sessions = RecordingSessions()
    host = WorkflowHost(build(), session_store=sessions)
    await host.run("c-1", message="one")
    # the first write creates the session (create-only, so a store syncs it regardless)
    assert sessions.writes == [("create", True, False), ("outcome", False, True)]
    sessions.writes.clear()
    result = await host.run("c-1", message="two")
    assert sessions.writes == [("lease", False, False), ("outcome", False, True)]
    stored = await sessions.get(ConversationKey(None, "c-1").session_id)
    assert stored is not None and "lease" not in stored.state
    assert result.resume_token is not None
    assert stored.state["checkpoint"].head_snapshot_id == result.resume_token.snapshot_id
