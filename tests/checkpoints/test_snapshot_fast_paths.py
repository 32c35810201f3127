"""The shortcuts a commit takes for the engine's common case give what the general path gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkflow import state as codec
from checkflow.checkpoints import _snapshot
from checkflow.checkpoints._snapshot import _metadata_tree, _now_iso, check_state_shape

_scalars = st.one_of(
    st.none(), st.booleans(), st.text(max_size=8),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.floats(allow_nan=False, allow_infinity=False), st.lists(st.integers(), max_size=2))


@given(st.dictionaries(st.one_of(st.text(max_size=6), st.just("$type")), _scalars, max_size=5))
def test_flat_metadata_is_its_to_builtins_form(metadata: dict[str, Any]) -> None:
    assert _metadata_tree(metadata) == codec.to_builtins(metadata, path="metadata")


def test_a_mapping_with_a_type_key_or_a_huge_int_takes_the_general_path() -> None:
    assert _metadata_tree({"$type": "x"})["$value"] == {"$type": "x"}
    assert _metadata_tree({"n": 1 << 64})["n"]["$type"] == "builtins.int"
    assert _metadata_tree({"n": (1 << 63) - 1}) == {"n": (1 << 63) - 1}


def test_the_timestamp_is_the_iso_form_datetime_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    base = datetime(2026, 12, 31, 23, 59, 59, 999_998, tzinfo=UTC)
    for step in range(4):  # across a second, a minute, a year
        moment = base + timedelta(microseconds=step)
        ns = int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
        monkeypatch.setattr(_snapshot.time, "time_ns", lambda ns=ns: ns)
        expected = moment.isoformat(timespec="microseconds").replace("+00:00", "Z")
        assert _now_iso() == expected


@pytest.mark.parametrize("state", [
    {"workflow_state": {}, "executor_states": {}, "edge_states": {}, "messages": {}},
    {"workflow_state": {}, "executor_states": {}, "edge_states": [],
     "messages": {"input": 1, "pending": 2, "output": 3}},
    {"workflow_state": {}, "executor_states": {}, "messages": {
        "input": 1, "pending": 2, "output": 3}},
])
def test_a_plain_dict_of_the_wrong_shape_is_still_refused(state: dict[str, Any]) -> None:
    with pytest.raises((ValueError, TypeError)):
        check_state_shape(state)
