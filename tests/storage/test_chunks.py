"""Big parts are stored as content-defined pieces: a growing part writes only what changed."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from checkflow import state as codec
from checkflow._fs import safe_name
from checkflow.checkpoints import Checkpoint
from checkflow.storage import FileCheckpointStorage
from checkflow.storage._chunks import MIN_CHUNKED, cut


def requests(count: int, seed: int = 0) -> dict[str, dict[str, object]]:
    """Request-like entries with random-looking ids, the same for the same seed (a test that
    depends on where content-defined cuts fall must not change from run to run)."""
    rng = random.Random(seed)
    return {f"{seed:04}-{n:06}-{rng.getrandbits(32):08x}": {"asks": f"question {n}", "n": n}
            for n in range(count)}


@given(data=st.binary(max_size=200_000), fmt=st.sampled_from(["json", "msgpack"]))
def test_the_pieces_join_up_to_exactly_the_part(data: bytes, fmt: str) -> None:
    pieces = cut(data, fmt)
    assert b"".join(pieces) == data
    assert all(pieces) or data == b""


def test_a_small_part_is_one_piece() -> None:
    data = b"x" * MIN_CHUNKED
    assert cut(data, "json") == [data]


def test_an_edit_in_the_middle_leaves_most_pieces_shared() -> None:
    # Cuts resynchronise after an edit, usually within a few pieces; with the minimum piece
    # size skipped for speed an unlucky layout can take longer (about half the pieces are
    # still shared in the worst of these seeds), so the bound is on the typical case.
    shares = []
    for seed in range(10):
        many = requests(3000, seed)
        before = cut(codec.encode(many), "json")
        changed = dict(many)
        del changed[next(iter(list(many)[1500:]))]
        changed["new"] = {"asks": "late", "n": -1}
        after = cut(codec.encode(changed), "json")
        assert len(before) > 20
        shares.append(len(set(before) & set(after)) / len(after))
    assert sum(shares) / len(shares) >= 0.85
    assert min(shares) >= 0.4


async def test_a_growing_part_writes_a_small_fraction_of_itself_per_commit(
    tmp_path: Path, make_state
) -> None:
    checkpoint = Checkpoint("c", checkpoint_storage=FileCheckpointStorage(tmp_path))
    waiting = requests(2000)
    await checkpoint.commit_snapshot(state=make_state(0, waiting=waiting))
    log = tmp_path / safe_name("c") / "log"
    part = len(codec.encode(waiting))
    for n in range(1, 6):
        waiting[f"more-{n}"] = {"asks": "another", "n": n}
        size = log.stat().st_size
        await checkpoint.commit_snapshot(state=make_state(n, waiting=waiting))
        assert log.stat().st_size - size < part // 10
    loaded = await FileCheckpointStorage(tmp_path).load("c")
    assert loaded.head_snapshot is not None
    assert loaded.head_snapshot.state["workflow_state"]["waiting"] == waiting
    assert len(loaded.snapshots[0].state["workflow_state"]["waiting"]) == 2000
    (report,) = await FileCheckpointStorage(tmp_path).verify("c")
    assert report.ok, report


edits = st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 40), st.binary(max_size=60)),
                 max_size=3)


@given(n=st.integers(10, 3000), edit=edits, seed=st.integers(0, 3),
       fmt=st.sampled_from(["json", "msgpack"]))
def test_a_part_recut_from_its_previous_version_gets_the_same_pieces_and_address(
    n: int, edit: list[tuple[int, int, bytes]], seed: int, fmt: str
) -> None:
    from checkflow.storage._chunks import cut_ends, recut
    from checkflow.storage._file import _address

    before = codec.encode(list(requests(n, seed).items()), format=fmt)  # type: ignore[arg-type]
    after = bytearray(before)
    for at, length, replacement in edit:  # arbitrary byte edits, anywhere
        at = at % (len(after) + 1)
        after[at : at + length] = replacement
    data = bytes(after)
    ends, kept, tail = recut(data, fmt, before, cut_ends(before, fmt))
    assert ends == cut_ends(data, fmt)
    assert kept + tail <= len(ends)
    previous = (before, *_address(before, fmt, None))
    assert _address(data, fmt, previous) == _address(data, fmt, None)


def test_one_changed_element_recuts_only_the_pieces_around_it() -> None:
    from checkflow.storage._chunks import cut_ends, recut

    many = requests(3000)
    before = codec.encode(many)
    changed = dict(many)
    changed[list(many)[1500]] = {"asks": "changed", "n": -1}
    ends, kept, tail = recut(codec.encode(changed), "json", before, cut_ends(before, "json"))
    assert len(ends) > 20
    assert len(ends) - kept - tail <= 4
