"""``serve`` tunes the cyclic collector once the app is loaded: what is alive then is frozen
out of later collections, and the youngest generation is collected less often."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from checkflow.cli._serve import GC_YOUNG_THRESHOLD, tune_collector


@pytest.fixture
def restored_collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_the_loaded_app_is_frozen_and_young_collections_are_rarer(
    restored_collector: None,
) -> None:
    before = gc.get_threshold()
    loaded = [object() for _ in range(10)]  # stands for the app: alive before serving
    tune_collector()
    assert gc.get_freeze_count() >= len(loaded)
    assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, *before[1:])
    assert before[0] < GC_YOUNG_THRESHOLD
