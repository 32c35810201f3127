"""The item layout's pure rules: partition keys, item ids, size bounds and chunk slicing."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from checkflow.storage.cosmos._layout import (
    _split_by_serialized_size,
    partition_key,
    serialized_size,
    snapshot_item_id,
)

_FORBIDDEN_IN_IDS = set("/\\?#")


def test_a_short_checkpoint_id_is_its_own_partition_key() -> None:
    assert partition_key("factor-run-123") == "factor-run-123"


def test_a_long_checkpoint_id_becomes_a_fixed_size_hash() -> None:
    key = partition_key("x" * 5000)
    assert key.startswith("sha256:") and len(key) == len("sha256:") + 64


def test_an_id_that_looks_hashed_is_hashed_too_so_keys_never_collide() -> None:
    hashed = partition_key("x" * 5000)
    assert partition_key(hashed) != hashed


@given(st.text(min_size=1, max_size=300))
def test_snapshot_item_ids_are_always_valid_cosmos_ids(snapshot_id: str) -> None:
    item_id = snapshot_item_id(snapshot_id)
    assert 0 < len(item_id) <= 255
    assert not _FORBIDDEN_IN_IDS & set(item_id)
    assert item_id != "manifest"


def test_distinct_awkward_snapshot_ids_get_distinct_item_ids() -> None:
    ids = ["a/b", "a?b", "a#b", "a\\b", "é", "a" * 300]
    assert len({snapshot_item_id(s) for s in ids}) == len(ids)


@given(st.recursive(st.text() | st.integers() | st.none(), lambda c: st.lists(c, max_size=4)))
def test_the_size_measure_bounds_the_sdks_json_escaped_or_not(body: object) -> None:
    measured = serialized_size(body)
    assert measured >= len(json.dumps(body, separators=(",", ":")))
    assert measured >= len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())


@given(st.text(max_size=400), st.integers(min_value=16, max_value=64))
def test_chunk_slices_join_back_and_each_fits_the_budget(text: str, budget: int) -> None:
    pieces = _split_by_serialized_size(text, budget)
    assert "".join(pieces) == text
    assert all(serialized_size(piece) <= budget for piece in pieces)
