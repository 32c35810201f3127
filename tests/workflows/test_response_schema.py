"""``response_schema``: the JSON Schema an answer must satisfy, computed once per annotation
(it is named on every view of a waiting request) and handed out as a fresh dict each time."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from checkflow.workflows._schema import response_schema


class Answer(msgspec.Struct):
    approved: bool
    note: str = ""


@pytest.mark.parametrize("annotation", [bool, list[int], int | None, Answer])
def test_the_schema_is_msgspecs_and_a_caller_changing_it_changes_nothing(
    annotation: Any,
) -> None:
    expected = msgspec.json.schema(annotation)
    first = response_schema(annotation)
    assert first == expected
    first["mutated"] = True
    assert response_schema(annotation) == expected


def test_annotations_without_a_schema_or_a_hash_still_answer() -> None:
    class Opaque:
        pass

    unhashable = type("Meta", (type,), {"__hash__": None})("Unhashable", (), {})
    with pytest.raises(TypeError):
        hash(unhashable)
    assert response_schema(Opaque) == {} and response_schema(unhashable) == {}
    assert response_schema(object) == {} and response_schema(Any) == {}


def test_an_annotation_without_a_schema_is_looked_at_once() -> None:
    from checkflow.workflows._schema import _schema_json

    class Opaque:
        pass

    before = _schema_json.cache_info().misses
    assert response_schema(Opaque) == {} and response_schema(Opaque) == {}
    assert _schema_json.cache_info().misses == before + 1
