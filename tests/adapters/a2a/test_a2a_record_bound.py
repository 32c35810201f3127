"""A2A task records are bounded like every adapter record: a task whose record would pass the
host's ``max_record_bytes`` is refused with a typed A2A error, and what was stored stays."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidRequestError

from checkflow.hosting import WorkflowHost
from checkflow.sessions import FileSessionStore
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import Workflow
from tests.adapters.a2a.conftest import ClientMaker, make_app, send_task, user_message


async def test_a_task_record_past_the_bound_is_a_typed_refusal(
    workflow: Workflow, tmp_path: Path, connect: ClientMaker,
) -> None:
    host = WorkflowHost(workflow, session_store=FileSessionStore(tmp_path / "s"),
                        checkpoint_storage=FileCheckpointStorage(tmp_path / "c"),
                        max_record_bytes=6_000)
    client = await connect(target=make_app(host))
    small = await send_task(client, user_message("hello"))
    assert small.status.state == a2a_pb2.TASK_STATE_COMPLETED
    with pytest.raises(InvalidRequestError, match="over the limit of 6000"):
        await send_task(client, user_message("x" * 8_000))
    # the refused task was never listed, and the stored one is intact
    listed = await client.list_tasks(a2a_pb2.ListTasksRequest())
    assert [t.id for t in listed.tasks] == [small.id]
    again = await client.get_task(a2a_pb2.GetTaskRequest(id=small.id))
    assert again.status.state == a2a_pb2.TASK_STATE_COMPLETED
