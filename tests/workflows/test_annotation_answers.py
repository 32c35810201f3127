"""Dispatch remembers what it worked out about annotations (``specificity``, ``compatible``,
``type_name``); the answers stay those of the plain computation, for annotations that can be
remembered (hashable) and for those that cannot."""

from __future__ import annotations

import typing
from typing import Annotated, Any, Literal

import pytest

from checkflow.workflows._typing import _rank, compatible, specificity, type_name


class Base:
    pass


class Child(Base):
    pass


UNHASHABLE = Annotated[int, ["metadata", "in", "a", "list"]]


def test_the_unhashable_annotation_is_unhashable() -> None:
    with pytest.raises(TypeError):
        hash(UNHASHABLE)


def _computed(function: Any, *args: Any) -> Any:
    """What the function answers when nothing is remembered."""
    return function.__wrapped__(*args)


@pytest.mark.parametrize(("value", "tp", "rank"), [
    (Child(), Child, 0), (Child(), Base, 1), (Child(), Base | None, 1), (Child(), Any, 4),
    (3, int, 0), (True, int, 1), (3, UNHASHABLE, None),
])
def test_specificity_asked_twice_answers_the_same(value: object, tp: Any, rank: int | None
                                                  ) -> None:
    expected = _computed(_rank, type(value), tp)
    assert rank is None or expected == rank
    assert specificity(value, tp) == expected
    assert specificity(value, tp) == expected


@pytest.mark.parametrize(("out_tp", "in_tp", "pinned"), [
    (Child, Base, True), (Base, Child, True), (int, str, False), (list[int], list[str], False),
    (Literal["a"], str, True), (Literal[1], str, False), (int | str, bytes, False),
    (UNHASHABLE, str, None), (str, UNHASHABLE, None),
])
def test_compatible_asked_twice_answers_the_same(out_tp: Any, in_tp: Any, pinned: bool | None
                                                 ) -> None:
    expected = _computed(compatible, out_tp, in_tp)
    assert pinned is None or expected is pinned
    assert compatible(out_tp, in_tp) is expected
    assert compatible(out_tp, in_tp) is expected


def test_type_name_of_a_class_that_cannot_be_named_still_raises_every_time() -> None:
    for _attempt in range(2):
        with pytest.raises(TypeError, match="cannot name the annotation"):
            type_name(typing.ParamSpec("P"))


def test_equal_annotations_share_an_answer_and_different_ones_do_not() -> None:
    assert type_name(int | str) == type_name(str | int) == "int | str"
    assert type_name(Literal[1]) == "typing.Literal[1]"
    assert type_name(Literal[True]) == "typing.Literal[True]"  # 1 == True, yet not the same
