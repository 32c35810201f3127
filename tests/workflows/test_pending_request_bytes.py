"""messages.pending is assembled from the waiting requests' own bytes, exactly as encoded whole."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkflow import state as codec
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage
from checkflow.workflows import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from checkflow.workflows._runstate import _pending_bytes


class Asker(Executor):
    """Parks one question per message, naming it after the message."""

    @handler
    async def ask(self, message: str, ctx: WorkflowContext) -> None:
        await ctx.request_info({"about": message, "tags": ("t", 1)}, response_type=bool,
                               request_id=f"q-{message}")

    @response_handler
    async def answered(self, request: dict, answer: bool, ctx: WorkflowContext) -> None:
        await ctx.yield_output([request["about"], answer])


def asking() -> Workflow:
    return WorkflowBuilder(start_executor=Asker(id="asker"), name="asking").build()


def stored_pending(snapshot: Any) -> tuple[bytes, bytes]:
    """(the committed pending bytes, what encoding the decoded pending whole writes)."""
    record = snapshot.record
    whole = codec.encode(snapshot.state["messages"]["pending"], format=record.format,
                         layout="tagged")
    return record.parts["messages"]["pending"], whole


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
async def test_pending_bytes_equal_encoding_the_pending_whole(fmt: str, tmp_path: Any) -> None:
    storage = FileCheckpointStorage(tmp_path, format=fmt)  # type: ignore[arg-type]
    workflow = asking()
    checkpoint = workflow.create_checkpoint(checkpoint_id="c", checkpoint_storage=storage)
    for n in range(20):  # more than 16 requests: a map16 header in MessagePack
        checkpoint = await storage.load("c") if n else checkpoint
        await workflow.run(str(n), checkpoint=checkpoint)
    for snapshot in (await storage.load("c")).snapshots[-4:]:
        committed, whole = stored_pending(snapshot)
        assert committed == whole


async def test_answering_one_request_keeps_the_others_byte_for_byte() -> None:
    storage = InMemoryCheckpointStorage()
    workflow = asking()
    checkpoint = workflow.create_checkpoint(checkpoint_id="c", checkpoint_storage=storage)
    for n in range(3):
        await workflow.run(str(n), checkpoint=checkpoint)
    loaded = await storage.load("c")
    before = loaded.head_snapshot.state["messages"]["pending"]["requests"]  # type: ignore[union-attr]
    result = await workflow.run(responses={"q-1": True}, checkpoint=loaded)
    assert result.get_outputs() == [["1", True]]
    head = (await storage.load("c")).head_snapshot
    assert head is not None
    after = head.state["messages"]["pending"]["requests"]
    assert sorted(after) == ["q-0", "q-2"]
    assert after == {rid: before[rid] for rid in ("q-0", "q-2")}
    assert after["q-0"]["data"]["tags"] == ("t", 1)  # tagged values survive the reuse
    committed, whole = stored_pending(head)
    assert committed == whole


request_ids = st.text(min_size=1, max_size=8).filter(lambda s: s != "$type")
values = st.recursive(st.none() | st.integers() | st.text(max_size=5),
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)


@given(deliveries=st.lists(values, max_size=3),
       requests=st.dictionaries(request_ids, values, max_size=40),
       fmt=st.sampled_from(["json", "msgpack"]))
def test_assembled_bytes_are_what_encoding_whole_writes(
    deliveries: list[Any], requests: dict[str, Any], fmt: str
) -> None:
    def tagged(value: Any) -> bytes:
        return codec.encode(value, format=fmt, layout="tagged")  # type: ignore[arg-type]

    whole = tagged({"messages": deliveries, "requests": requests})
    pieces = [(rid, tagged(v)) for rid, v in requests.items()]
    assembled = _pending_bytes(fmt, tagged(deliveries), pieces)  # type: ignore[arg-type]
    assert assembled == whole


async def test_a_hydrated_run_reuses_each_waiting_requests_bytes() -> None:
    from checkflow.checkpoints import EncodedPart
    from checkflow.workflows._runstate import RunState

    storage = InMemoryCheckpointStorage()
    workflow = asking()
    checkpoint = workflow.create_checkpoint(checkpoint_id="c", checkpoint_storage=storage)
    for n in range(3):
        await workflow.run(str(n), checkpoint=checkpoint)
    head = (await storage.load("c")).head_snapshot
    run = RunState.hydrate(head, workflow.resolve_type, "c")
    assert run.request_bytes is not None
    fmt, cached = run.request_bytes
    assert fmt == "json"
    assert sorted(cached) == ["q-0", "q-1", "q-2"]
    assert all(cached[rid][0] is run.requests[rid] for rid in cached)
    pending = run.export(workflow.type_ref, "json")["messages"]["pending"]
    assert type(pending) is EncodedPart
    assert pending.data == head.record.parts["messages"]["pending"]  # type: ignore[union-attr]
