"""Benchmark: the state codec against plain msgspec (and, later, storage commit latency).

Prints figures and ratios; asserts nothing (targets are in issue 2: codec within 3x of plain
msgspec). Run: ``.venv/bin/python bench/codec_and_storage.py``. Each section is one function
called from ``main()``; add new sections the same way.
"""

from __future__ import annotations

import datetime
import timeit
from collections.abc import Callable
from typing import Any

import msgspec

from checkflow import state

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
            f" | round trip {(enc + dec) / (plain_enc + plain_dec):4.1f}x (target <= 3x)"
        )
    tree = state.to_builtins(value)
    walk = best_of(lambda: state.to_builtins(value))
    tagged = best_of(lambda: _PLAIN["json"][0].encode(tree))
    print(
        f"where encode time goes (json): Python walk to_builtins {walk * 1e3:.2f} ms, "
        f"msgspec on the tagged tree {tagged * 1e3:.2f} ms"
    )


def main() -> None:
    bench_codec()


if __name__ == "__main__":
    main()
