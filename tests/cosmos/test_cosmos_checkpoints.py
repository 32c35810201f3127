"""CosmosCheckpointStorage against the emulator: layout, atomic commits, chunks, removal."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from azure.cosmos.exceptions import CosmosBatchOperationError
from cosmos_emulator import cosmos_client
from cosmos_support import make_state, partition_items, state_of_size

from checkflow.checkpoints import Checkpoint, CheckpointSnapshot, CheckpointStorage
from checkflow.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    UnsupportedFormatVersionError,
)
from checkflow.storage.cosmos import CosmosCheckpointStorage
from checkflow.storage.cosmos._layout import partition_key, snapshot_item_id


async def _started(storage: CosmosCheckpointStorage, cid: str = "run-1", n: int = 1) -> Checkpoint:
    checkpoint = Checkpoint(cid, workflow_name="wf", checkpoint_storage=storage)
    for i in range(n):
        await checkpoint.commit_snapshot(state=make_state(i), metadata={"step": i})
    return checkpoint


async def _committed_and_reloaded(
    storage: CosmosCheckpointStorage, cid: str, state: dict[str, Any], **metadata: Any
) -> CheckpointSnapshot:
    """Commit one snapshot to a new checkpoint ``cid``; its head as a fresh load sees it."""
    await Checkpoint(cid, checkpoint_storage=storage).commit_snapshot(state=state,
                                                                      metadata=metadata)
    head = (await storage.load(cid)).head_snapshot
    assert head is not None
    return head


# -- layout ----------------------------------------------------------------------------------


def test_the_storage_satisfies_the_checkpoint_storage_protocol(
    cosmos_storage: CosmosCheckpointStorage,
) -> None:
    assert isinstance(cosmos_storage, CheckpointStorage)


async def test_one_partition_holds_the_manifest_and_one_item_per_snapshot(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    checkpoint = await _started(cosmos_storage, n=2)
    items = await partition_items(cosmos_container, "run-1")
    first, second = checkpoint.snapshots
    assert set(items) == {"manifest", f"s.{first.snapshot_id}", f"s.{second.snapshot_id}"}
    assert {item["pk"] for item in items.values()} == {"run-1"}
    assert items["manifest"]["head_snapshot_id"] == second.snapshot_id
    assert items["manifest"]["checkpoint_id"] == "run-1"


async def test_json_parts_are_readable_json_text_in_the_item(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    checkpoint = await _started(cosmos_storage)
    items = await partition_items(cosmos_container, "run-1")
    item = items[snapshot_item_id(checkpoint.head_snapshot_id or "")]
    assert json.loads(item["parts"]["executor_states"]["worker"]) == {"payload": 0}
    assert item["metadata"] == {"step": 0}


async def test_msgpack_storage_round_trips_state_as_base64_parts(cosmos_container: Any) -> None:
    storage = CosmosCheckpointStorage(cosmos_container, format="msgpack")
    state = make_state({"blob": b"\x00\xff", "when": (1, 2)})
    head = await _committed_and_reloaded(storage, "mp", state)
    assert head.state == state
    assert head.record.format == "msgpack"


async def test_metadata_beyond_json_types_round_trips(
    cosmos_storage: CosmosCheckpointStorage,
) -> None:
    metadata = {"boundary": "superstep_completed", "digest": b"\x00\xfe", "span": (1, 2)}
    head = await _committed_and_reloaded(cosmos_storage, "meta", make_state(), **metadata)
    assert head.metadata == metadata


async def test_a_checkpoint_id_too_long_for_a_partition_key_is_hashed(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    long_id = "run/" + "é" * 2000
    checkpoint = await _started(cosmos_storage, long_id)
    assert partition_key(long_id).startswith("sha256:")
    loaded = await cosmos_storage.load(long_id)
    assert (loaded.checkpoint_id, loaded.head_snapshot_id) == (
        long_id,
        checkpoint.head_snapshot_id,
    )
    assert await cosmos_storage.list_checkpoint_ids() == [long_id]


async def test_load_rebuilds_lineage_branches_and_head(
    cosmos_storage: CosmosCheckpointStorage,
) -> None:
    checkpoint = await _started(cosmos_storage, n=3)
    root = checkpoint.snapshots[0]
    checkpoint.restart_from(root.snapshot_id)
    branch = await checkpoint.commit_snapshot(state=make_state("branch"))
    loaded = await cosmos_storage.load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots] == [
        s.snapshot_id for s in checkpoint.snapshots
    ]
    assert loaded.head_snapshot_id == branch.snapshot_id
    assert loaded.get_snapshot(branch.snapshot_id).parent_snapshot_id == root.snapshot_id
    assert loaded.checkpoint_storage is cosmos_storage


async def test_partitions_do_not_see_each_other(cosmos_storage: CosmosCheckpointStorage) -> None:
    await _started(cosmos_storage, "a", n=2)
    await _started(cosmos_storage, "b", n=1)
    assert len((await cosmos_storage.load("a")).snapshots) == 2
    assert len((await cosmos_storage.load("b")).snapshots) == 1
    assert await cosmos_storage.list_checkpoint_ids() == ["a", "b"]


# -- conflicts and the ETag cache ------------------------------------------------------------


async def test_a_stale_object_never_reuses_the_etag_another_object_produced(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    await _started(cosmos_storage)
    fresh = await cosmos_storage.load("run-1")
    stale = await cosmos_storage.load("run-1")
    won = await fresh.commit_snapshot(state=make_state("fresh"))
    with pytest.raises(CheckpointConflictError) as caught:
        await stale.commit_snapshot(state=make_state("stale"))
    assert caught.value.actual_head_snapshot_id == won.snapshot_id
    items = await partition_items(cosmos_container, "run-1")
    assert items["manifest"]["head_snapshot_id"] == won.snapshot_id
    assert len(items) == 3


async def test_a_storage_that_never_saw_the_head_reads_the_manifest_and_refuses(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    first = await _started(cosmos_storage)
    other = CosmosCheckpointStorage(cosmos_container)
    stale = Checkpoint(
        "run-1",
        snapshots=first.snapshots,
        head_snapshot_id=first.head_snapshot_id,
        checkpoint_storage=other,
    )
    won = await first.commit_snapshot(state=make_state("first"))
    with pytest.raises(CheckpointConflictError) as caught:
        await stale.commit_snapshot(state=make_state("stale"))
    assert caught.value.expected_head_snapshot_id == first.snapshots[0].snapshot_id
    assert caught.value.actual_head_snapshot_id == won.snapshot_id


async def test_creating_an_existing_checkpoint_conflicts_naming_its_head(
    cosmos_storage: CosmosCheckpointStorage,
) -> None:
    existing = await _started(cosmos_storage)
    again = Checkpoint("run-1", checkpoint_storage=cosmos_storage)
    with pytest.raises(CheckpointConflictError) as caught:
        await again.commit_snapshot(state=make_state())
    assert caught.value.expected_head_snapshot_id is None
    assert caught.value.actual_head_snapshot_id == existing.head_snapshot_id


async def test_a_batch_failing_on_its_second_operation_changes_nothing(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    checkpoint = await _started(cosmos_storage, n=2)
    squatter = {"id": snapshot_item_id("taken"), "pk": "run-1", "kind": "other"}
    await cosmos_container.create_item(squatter)
    before = await partition_items(cosmos_container, "run-1")
    snapshot = CheckpointSnapshot(
        state=make_state("new"), parent_snapshot_id=checkpoint.head_snapshot_id, snapshot_id="taken"
    )
    with pytest.raises(CosmosBatchOperationError) as caught:
        await cosmos_storage.commit_snapshot(
            checkpoint, snapshot, expected_head_snapshot_id=checkpoint.head_snapshot_id
        )
    assert caught.value.error_index == 1
    assert await partition_items(cosmos_container, "run-1") == before
    loaded = await cosmos_storage.load("run-1")
    assert loaded.head_snapshot_id == checkpoint.head_snapshot_id


# -- chunks ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "min_chunks"),
    [
        pytest.param(state_of_size(5_000_000), 4, id="5 MB state"),
        # 700 000 quotes: 1.4 MB of JSON text, 2.8 MB once escaped inside an item
        pytest.param(make_state('"' * 700_000), 2, id="escaping inflates the size"),
    ],
)
async def test_a_large_state_commits_in_chunks_and_loads_back_equal(
    cosmos_storage: CosmosCheckpointStorage,
    cosmos_container: Any,
    state: dict[str, Any],
    min_chunks: int,
) -> None:
    head = await _committed_and_reloaded(cosmos_storage, "big", state)
    assert head.state == state
    items = await partition_items(cosmos_container, "big")
    assert sum(item["kind"] == "chunk" for item in items.values()) >= min_chunks


async def test_chunks_of_a_commit_that_lost_are_invisible_and_pruned(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    await _started(cosmos_storage)
    winner = await cosmos_storage.load("run-1")
    loser = await cosmos_storage.load("run-1")
    won = await winner.commit_snapshot(state=make_state("small"))
    with pytest.raises(CheckpointConflictError):
        await loser.commit_snapshot(state=state_of_size(3_000_000))  # chunks land, batch fails
    items = await partition_items(cosmos_container, "run-1")
    assert sum(item["kind"] == "chunk" for item in items.values()) >= 2
    loaded = await cosmos_storage.load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots][-1] == won.snapshot_id
    assert len(loaded.snapshots) == 2
    assert await cosmos_storage.prune("run-1", keep=[]) == []
    items = await partition_items(cosmos_container, "run-1")
    assert all(item["kind"] != "chunk" for item in items.values())
    assert len(items) == 3


async def test_a_commit_prepared_before_prune_touched_the_manifest_still_lands(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    checkpoint = await _started(cosmos_storage)
    await cosmos_container.create_item(
        {"id": "c.stray", "pk": "run-1", "kind": "chunk", "epoch": "old", "data": "x"}
    )
    other = CosmosCheckpointStorage(cosmos_container)
    assert await other.prune("run-1", keep=[]) == []  # touches the manifest: new ETag
    snapshot = await checkpoint.commit_snapshot(state=make_state("after prune"))
    assert (await cosmos_storage.load("run-1")).head_snapshot_id == snapshot.snapshot_id


async def test_prune_removes_unkept_branches_and_their_chunks(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    checkpoint = await _started(cosmos_storage)
    root = checkpoint.head_snapshot_id or ""
    big = await checkpoint.commit_snapshot(state=state_of_size(2_000_000))
    checkpoint.restart_from(root)
    head = await checkpoint.commit_snapshot(state=make_state("other branch"))
    assert await cosmos_storage.prune("run-1", keep=[]) == [big.snapshot_id]
    items = await partition_items(cosmos_container, "run-1")
    prunes = [item for name, item in items.items() if name.startswith("p.")]
    assert [p["snapshot_ids"] for p in prunes] == [[big.snapshot_id]]  # the prune's record
    assert set(items) - {p["id"] for p in prunes} == {
        "manifest", snapshot_item_id(root), snapshot_item_id(head.snapshot_id)}


# -- delete and corruption -------------------------------------------------------------------


async def test_delete_removes_every_item_and_the_id_is_then_unknown(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    await _started(cosmos_storage, n=2)
    await cosmos_storage.delete("run-1")
    assert await partition_items(cosmos_container, "run-1") == {}
    with pytest.raises(CheckpointNotFoundError):
        await cosmos_storage.load("run-1")
    with pytest.raises(CheckpointNotFoundError):
        await cosmos_storage.delete("run-1")


async def test_leftovers_of_an_interrupted_delete_never_reach_a_new_checkpoint(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    await _started(cosmos_storage, n=2)
    await cosmos_container.delete_item("manifest", partition_key="run-1")  # delete's first step
    fresh = await _started(CosmosCheckpointStorage(cosmos_container), n=1)
    loaded = await cosmos_storage.load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots] == [fresh.head_snapshot_id]
    await cosmos_storage.prune("run-1", keep=[])
    assert len(await partition_items(cosmos_container, "run-1")) == 2


async def test_deleting_a_re_created_checkpoint_also_removes_an_interrupted_deletes_leftovers(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    await _started(cosmos_storage, n=2)
    await cosmos_container.delete_item("manifest", partition_key="run-1")  # delete's first step
    await _started(cosmos_storage, n=1)
    await cosmos_storage.delete("run-1")
    assert await partition_items(cosmos_container, "run-1") == {}


async def test_deleting_an_id_whose_delete_was_interrupted_finishes_it_and_says_not_found(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    await _started(cosmos_storage, n=2)
    await cosmos_container.delete_item("manifest", partition_key="run-1")
    with pytest.raises(CheckpointNotFoundError):
        await cosmos_storage.delete("run-1")
    assert await partition_items(cosmos_container, "run-1") == {}


async def test_delete_keeps_chunks_a_first_commit_may_still_be_writing(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    await _started(cosmos_storage)
    in_flight = {"id": "c.next", "pk": "run-1", "kind": "chunk", "epoch": "new", "data": "x"}
    await cosmos_container.create_item(in_flight)
    await cosmos_storage.delete("run-1")
    assert set(await partition_items(cosmos_container, "run-1")) == {"c.next"}


async def test_a_commit_that_keeps_losing_to_prune_says_so_and_changes_nothing(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    checkpoint = await _started(cosmos_storage)
    pruner = CosmosCheckpointStorage(cosmos_container)

    class PrunedBeforeEveryBatch(CosmosCheckpointStorage):
        """Another host's prune() (of a stray chunk) touches the manifest before each batch."""

        async def _execute_batch(self, pk: str, operations: list[Any]) -> list[Any]:
            stray = {"id": f"c.{uuid.uuid4().hex}", "pk": pk, "kind": "chunk", "epoch": "old"}
            await cosmos_container.create_item({**stray, "data": "x"})
            await pruner.prune("run-1", keep=[])
            return await super()._execute_batch(pk, operations)

    loaded = await PrunedBeforeEveryBatch(cosmos_container).load("run-1")
    with pytest.raises(CheckpointConflictError, match="kept being rewritten") as caught:
        await loaded.commit_snapshot(state=make_state("never lands"))
    head = checkpoint.head_snapshot_id
    assert caught.value.actual_head_snapshot_id == caught.value.expected_head_snapshot_id == head
    assert (await cosmos_storage.load("run-1")).head_snapshot_id == head


async def test_metadata_too_large_for_a_batch_is_refused_before_anything_commits(
    cosmos_storage: CosmosCheckpointStorage,
) -> None:
    checkpoint = await _started(cosmos_storage)
    with pytest.raises(CheckpointError, match="exceeds the limits"):
        await checkpoint.commit_snapshot(state=make_state(), metadata={"log": "x" * 1_600_000})
    loaded = await cosmos_storage.load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots] == [checkpoint.head_snapshot_id]


async def test_load_shows_only_the_snapshots_the_manifest_reaches_by_seq(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    checkpoint = await _started(cosmos_storage, n=2)
    manifest = await cosmos_container.read_item("manifest", partition_key="run-1")
    head_id = checkpoint.head_snapshot_id or ""
    head_item = await cosmos_container.read_item(snapshot_item_id(head_id), partition_key="run-1")
    planted_id = str(uuid.uuid4())  # a snapshot past the manifest: no commit ever moved to it
    await cosmos_container.create_item({
        **{k: v for k, v in head_item.items() if not k.startswith("_")},
        "id": snapshot_item_id(planted_id), "snapshot_id": planted_id,
        "parent_snapshot_id": head_id, "epoch": manifest["epoch"], "seq": manifest["seq"] + 1,
    })
    loaded = await cosmos_storage.load("run-1")
    assert planted_id not in {s.snapshot_id for s in loaded.snapshots}
    committed = [s.snapshot_id for s in checkpoint.snapshots]
    assert [s.snapshot_id for s in loaded.snapshots] == committed
    assert loaded.head_snapshot_id == head_id


async def test_a_missing_head_item_is_reported_as_corruption_naming_it(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    checkpoint = await _started(cosmos_storage, n=2)
    head_item = snapshot_item_id(checkpoint.head_snapshot_id or "")
    await cosmos_container.delete_item(head_item, partition_key="run-1")
    with pytest.raises(CorruptCheckpointError, match=head_item):
        await cosmos_storage.load("run-1")


async def test_a_garbled_snapshot_item_is_reported_as_corruption_naming_it(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    checkpoint = await _started(cosmos_storage)
    head_item = snapshot_item_id(checkpoint.head_snapshot_id or "")
    item = await cosmos_container.read_item(head_item, partition_key="run-1")
    item["parts"] = {"workflow_state": "not a mapping"}
    await cosmos_container.replace_item(head_item, item)
    with pytest.raises(CorruptCheckpointError, match=head_item):
        await cosmos_storage.load("run-1")


async def test_a_manifest_from_a_newer_release_is_refused(
    cosmos_storage: CosmosCheckpointStorage, cosmos_container: Any
) -> None:
    await _started(cosmos_storage)
    manifest = await cosmos_container.read_item("manifest", partition_key="run-1")
    manifest["version"] = 99
    await cosmos_container.replace_item("manifest", manifest)
    with pytest.raises(UnsupportedFormatVersionError, match="99"):
        await cosmos_storage.load("run-1")


async def test_from_endpoint_creates_the_database_and_container(cosmos_emulator: Any) -> None:
    database = f"db-{uuid.uuid4().hex}"
    async with await CosmosCheckpointStorage.from_endpoint(
        cosmos_emulator.endpoint, cosmos_emulator.key, database=database, container="checkpoints"
    ) as storage:
        try:
            checkpoint = await _started(storage)
            loaded = await storage.load("run-1")
            assert loaded.head_snapshot_id == checkpoint.head_snapshot_id
            properties = await storage.container.read()
            assert properties["partitionKey"]["paths"] == ["/pk"]
        finally:
            async with cosmos_client(cosmos_emulator) as client:
                await client.delete_database(database)
