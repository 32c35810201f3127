"""Cutting a part like the one cut before reuses its cuts, and gives exactly a full scan's."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkflow import state
from checkflow.storage import _chunks

FORMATS = ["json", "msgpack"]


def full_scan(data: bytes, fmt: str) -> list[bytes]:
    """The pieces of a scan from the start that remembers nothing."""
    if len(data) <= _chunks.MIN_CHUNKED:
        return [data]
    ends, _ = _chunks._scan(data, fmt, 0, [], set(), None)
    return [data[a:b] for a, b in zip([0, *ends], ends, strict=False)]


def document(items: int, seed: int) -> list[dict[str, object]]:
    rnd = random.Random(seed)
    return [{"id": i, "text": "w" * rnd.randrange(40), "tags": (i, "t")} for i in range(items)]


edits = st.lists(
    st.tuples(
        st.sampled_from(["replace", "insert", "delete", "grow"]),
        st.floats(0, 1),  # where, as a fraction of the length
        st.integers(1, 70_000),  # how much
    ),
    min_size=1,
    max_size=6,
)


@given(st.sampled_from(FORMATS), st.integers(0, 3), edits)
def test_cutting_an_edited_part_gives_the_pieces_of_a_full_scan(
    fmt: state.Format, seed: int, changes: list[tuple[str, float, int]]
) -> None:
    data = state.encode(document(1500, seed), format=fmt)
    assert _chunks.cut(data, fmt) == full_scan(data, fmt)
    for kind, where, size in changes:
        at = int(where * len(data))
        if kind == "replace":
            data = data[:at] + bytes([data[at % len(data)] ^ 1]) + data[at + 1 :]
        elif kind == "insert":
            data = data[:at] + b'},{"' * (size // 4 + 1) + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + size :]
        else:  # no content cut for longer than a piece: forced cuts
            data = data[:at] + b"\xa5" * size + data[at:]
        pieces = _chunks.cut(data, fmt)
        assert pieces == full_scan(data, fmt)
        assert b"".join(pieces) == data


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_part_changed_in_one_place_is_rescanned_only_around_the_change(
    fmt: state.Format, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = document(1500, 0)
    first = state.encode(value, format=fmt)
    _chunks.cut(first, fmt)
    value[700]["text"] = "changed"
    second = state.encode(value, format=fmt)
    expected = full_scan(second, fmt)
    scanned: list[int] = []
    real = _chunks._scan

    def counting(data: bytes, *args: object) -> tuple[list[int], set[int]]:
        ends, regular = real(data, *args)  # type: ignore[arg-type]
        scanned.append(args[1])  # type: ignore[arg-type]
        return ends, regular

    monkeypatch.setattr(_chunks, "_scan", counting)
    assert _chunks.cut(second, fmt) == expected
    (start,) = scanned
    assert start > len(second) // 4  # resumed well inside the unchanged prefix
