"""Benchmark: the state codec against plain msgspec, and file-storage commit latency and size.

Prints figures and ratios; asserts nothing (targets, from issue 16: the codec round trip
within 2x of plain msgspec, the file storage's commit within 1.5x of one bare write+fsync).
Run: ``.venv/bin/python bench/codec_and_storage.py``. Each section is one function
called from ``main()``; add new sections the same way.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import tempfile
import time
import timeit
from collections.abc import Callable
from typing import Any

import msgspec

from checkflow import state
from checkflow.checkpoints import Checkpoint, CheckpointSnapshot
from checkflow.storage import FileCheckpointStorage

FORMATS: tuple[state.Format, ...] = ("json", "msgpack")
_PLAIN: dict[str, tuple[Any, Any]] = {
    "json": (msgspec.json.Encoder(), msgspec.json.Decoder()),
    "msgpack": (msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()),
}


def make_state(items: int = 1_000) -> dict[str, Any]:
    """A ~100 KB state: small dicts with strings, ints, datetimes and tuples."""
    base = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    notes = [
        {
            "id": i,
            "author": f"user-{i % 37}",
            "text": f"note {i} on section {i % 11}",
            "score": i * 7 % 101,
            "created": base + datetime.timedelta(seconds=i),
            "span": (i, i + 3),
        }
        for i in range(items)
    ]
    return {
        "workflow_state": {"step": 3},
        "executor_states": {"reviewer": {"notes": notes}},
        "edge_states": {},
        "messages": {"input": [], "pending": [], "output": []},
    }


def best_of(func: Callable[[], object], *, number: int = 20, repeat: int = 7) -> float:
    """Best mean seconds per call over ``repeat`` runs of ``number`` calls."""
    return min(timeit.repeat(func, number=number, repeat=repeat)) / number


def bench_codec() -> None:
    """checkflow.state encode/decode vs msgspec on the same data converted to builtins."""
    value = make_state()
    plain_value = msgspec.to_builtins(value)
    print("== codec: ~100 KB state (1,000 small dicts: str, int, datetime, tuple) ==")
    for fmt in FORMATS:
        encoder, decoder = _PLAIN[fmt]
        data = state.encode(value, format=fmt)
        plain_data = encoder.encode(plain_value)
        assert state.decode(data, format=fmt) == value
        enc = best_of(lambda fmt=fmt: state.encode(value, format=fmt))
        dec = best_of(lambda fmt=fmt, data=data: state.decode(data, format=fmt))
        plain_enc = best_of(lambda encoder=encoder: encoder.encode(plain_value))
        plain_dec = best_of(lambda decoder=decoder, data=plain_data: decoder.decode(data))
        print(
            f"{fmt:8} size {len(data) / 1024:6.1f} KB (plain {len(plain_data) / 1024:6.1f} KB)"
            f" | encode {enc * 1e3:6.2f} ms vs {plain_enc * 1e3:5.2f} ms = {enc / plain_enc:4.1f}x"
            f" | decode {dec * 1e3:6.2f} ms vs {plain_dec * 1e3:5.2f} ms = {dec / plain_dec:4.1f}x"
            f" | round trip {(enc + dec) / (plain_enc + plain_dec):4.1f}x (target <= 2x)"
        )
    tree = state.to_builtins(value)
    walk = best_of(lambda: state.to_builtins(value))
    tagged = best_of(lambda: _PLAIN["json"][0].encode(tree))
    print(
        f"where encode time goes (json): Python walk to_builtins {walk * 1e3:.2f} ms, "
        f"msgspec on the tagged tree {tagged * 1e3:.2f} ms"
    )


def append_fsync(path: str, data: bytes) -> None:
    """One append of ``data`` to ``path`` and its fsync: what any durable commit pays."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def bare_write_fsync(path: str, data: bytes, rounds: int) -> float:
    """Mean seconds of one append + fsync of ``data`` (the floor any durable commit pays)."""
    started = time.perf_counter()
    for _ in range(rounds):
        append_fsync(path, data)
    return (time.perf_counter() - started) / rounds


async def mean_commit(checkpoint: Checkpoint, states: list[dict[str, Any]]) -> float:
    started = time.perf_counter()
    for value in states:
        await checkpoint.commit_snapshot(state=value)
    return (time.perf_counter() - started) / len(states)


async def mean_storage_commit(
    storage: FileCheckpointStorage, checkpoint: Checkpoint, snapshots: list[CheckpointSnapshot]
) -> float:
    """The storage's share of a commit: persist already-encoded snapshots as a chain."""
    head = checkpoint.head_snapshot_id
    started = time.perf_counter()
    for snapshot in snapshots:
        chained = CheckpointSnapshot.from_record(
            msgspec.structs.replace(snapshot.record, parent_snapshot_id=head)
        )
        await storage.commit_snapshot(checkpoint, chained, expected_head_snapshot_id=head)
        head = chained.snapshot_id
    return (time.perf_counter() - started) / len(snapshots)


def with_step(value: dict[str, Any], step: int, *, touch_notes: bool) -> dict[str, Any]:
    """The same state one superstep later: the counter moves; the notes change or not."""
    reviewer = value["executor_states"]["reviewer"]
    notes = [*reviewer["notes"][:-1], {**reviewer["notes"][-1], "score": step}]
    executor_states = {"reviewer": {"notes": notes}} if touch_notes else value["executor_states"]
    return {**value, "workflow_state": {"step": step}, "executor_states": executor_states}


async def bench_file_commits(root: str, fmt: state.Format, rounds: int) -> None:
    value = make_state()
    encoded = state.encode(value, format=fmt)
    bare = bare_write_fsync(os.path.join(root, f"bare-{fmt}"), encoded, rounds)
    print(
        f"{fmt:8} one bare write+fsync of the encoded {len(encoded) / 1024:.0f} KB state: "
        f"{bare * 1e3:.2f} ms"
    )
    for touch_notes in (False, True):
        storage = FileCheckpointStorage(os.path.join(root, f"{fmt}-{touch_notes}"), format=fmt)
        checkpoint = Checkpoint("bench", checkpoint_storage=storage)
        await checkpoint.commit_snapshot(state=value)
        states = [with_step(value, step, touch_notes=touch_notes) for step in range(rounds)]
        commit = await mean_commit(checkpoint, states)
        snapshots = [CheckpointSnapshot(state=v, format=fmt) for v in states[:50]]
        storage_only = await mean_storage_commit(storage, checkpoint, snapshots)
        label = "100 KB part changes each commit" if touch_notes else "100 KB part unchanged"
        print(
            f"{fmt:8} commit, encoding included ({label}): {commit * 1e3:.2f} ms "
            f"= {commit / bare:.2f}x bare write+fsync (target <= 2x)"
        )
        print(
            f"{fmt:8}   of which the storage call (snapshot already encoded): "
            f"{storage_only * 1e3:.2f} ms = {storage_only / bare:.2f}x bare write+fsync "
            "(target <= 1.5x)"
        )


async def bench_bytes_per_commit(root: str, commits: int = 1_000) -> None:
    value = make_state()
    storage = FileCheckpointStorage(os.path.join(root, "growth"))
    checkpoint = Checkpoint("growth", checkpoint_storage=storage)
    sizes: list[int] = []
    for step in range(commits + 1):
        await checkpoint.commit_snapshot(state=with_step(value, step, touch_notes=False))
        sizes.append(sum(f.stat().st_size for f in storage.root.rglob("log")))
    first = (sizes[100] - sizes[0]) / 100
    last = (sizes[commits] - sizes[commits - 100]) / 100
    started = time.perf_counter()
    loaded = await FileCheckpointStorage(storage.root).load("growth")
    load = time.perf_counter() - started
    print(
        f"bytes written per commit (100 KB state, only the step counter changes): "
        f"commits 1-100 {first:.0f} B, commits {commits - 99}-{commits} {last:.0f} B "
        f"(target: flat, <= 8 KiB); log {sizes[-1] / 1024:.0f} KB for {commits + 1} snapshots; "
        f"load {len(loaded.snapshots)} snapshots {load * 1e3:.1f} ms"
    )


def bench_storage(rounds: int = 200) -> None:
    """File-storage commit latency vs one bare write+fsync; bytes per commit over 1,000 commits."""
    print("== file storage: commit latency and bytes per commit ==")
    with tempfile.TemporaryDirectory(prefix="checkflow-bench-", dir=os.getcwd()) as root:
        for fmt in FORMATS:
            asyncio.run(bench_file_commits(root, fmt, rounds))
        asyncio.run(bench_bytes_per_commit(root))


def main() -> None:
    bench_codec()
    bench_storage()


if __name__ == "__main__":
    main()
