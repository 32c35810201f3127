"""Commits whose answer never arrives: a real proxy cuts the connection around the batch."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from cosmos_support import FaultyProxy, make_state

from checkflow.checkpoints import Checkpoint
from checkflow.errors import CommitOutcomeUnknownError
from checkflow.storage.cosmos import CosmosCheckpointStorage

OpenStorage = Callable[..., Awaitable[CosmosCheckpointStorage]]


async def _started(open_storage: OpenStorage, **client_options: object) -> Checkpoint:
    storage = await open_storage(**client_options)
    checkpoint = Checkpoint("run-1", checkpoint_storage=storage)
    await checkpoint.commit_snapshot(state=make_state("first"))
    return checkpoint


async def test_a_batch_whose_answer_was_lost_is_found_committed_by_rereading(
    proxied_storage: OpenStorage, faulty_proxy: FaultyProxy
) -> None:
    checkpoint = await _started(proxied_storage, retry_total=0)
    faulty_proxy.arm("drop_response")
    snapshot = await checkpoint.commit_snapshot(state=make_state("second"))
    assert checkpoint.head_snapshot_id == snapshot.snapshot_id
    assert faulty_proxy.batches_seen == 2
    loaded = await (await proxied_storage()).load("run-1")
    assert loaded.head_snapshot_id == snapshot.snapshot_id


async def test_an_sdk_retry_refused_because_its_first_attempt_landed_counts_as_committed(
    proxied_storage: OpenStorage, faulty_proxy: FaultyProxy
) -> None:
    checkpoint = await _started(proxied_storage)  # the SDK's own retries on
    faulty_proxy.arm("drop_response", times=1)  # lands, answer lost; the SDK re-sends: 412
    snapshot = await checkpoint.commit_snapshot(state=make_state("second"))
    assert faulty_proxy.batches_seen == 3
    loaded = await (await proxied_storage()).load("run-1")
    assert loaded.head_snapshot_id == snapshot.snapshot_id
    assert len(loaded.snapshots) == 2


async def test_a_batch_that_may_not_have_landed_raises_outcome_unknown(
    proxied_storage: OpenStorage, faulty_proxy: FaultyProxy
) -> None:
    checkpoint = await _started(proxied_storage, retry_total=0)
    head = checkpoint.head_snapshot_id
    faulty_proxy.arm("drop_request")
    with pytest.raises(CommitOutcomeUnknownError) as caught:
        await checkpoint.commit_snapshot(state=make_state("second"))
    assert caught.value.checkpoint_id == "run-1"
    assert checkpoint.head_snapshot_id == head
    assert len(checkpoint.snapshots) == 1


async def test_after_an_unknown_outcome_refresh_and_commit_recover(
    proxied_storage: OpenStorage, faulty_proxy: FaultyProxy
) -> None:
    checkpoint = await _started(proxied_storage, retry_total=0)
    faulty_proxy.arm("drop_request", times=1)
    with pytest.raises(CommitOutcomeUnknownError):
        await checkpoint.commit_snapshot(state=make_state("lost"))
    await checkpoint.refresh()
    snapshot = await checkpoint.commit_snapshot(state=make_state("again"))
    loaded = await (await proxied_storage()).load("run-1")
    assert [s.snapshot_id for s in loaded.snapshots] == [
        checkpoint.snapshots[0].snapshot_id,
        snapshot.snapshot_id,
    ]
