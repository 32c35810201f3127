"""The error hierarchy: one tree, drawn in ``checkflow.errors``' docstring, all of it exported."""

from __future__ import annotations

import inspect
import re

import pytest

import checkflow
from checkflow import errors

ERROR_CLASSES = sorted(
    (
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.CheckflowError) and cls.__module__ == errors.__name__
    ),
    key=lambda cls: cls.__name__,
)


def drawn_tree() -> dict[str, str | None]:
    """Each class name in the docstring tree mapped to the name drawn as its parent."""
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        match = re.match(r"^    ((?:[│ ]   )*)(?:[├└]── )?([A-Z]\w+Error)\b", line)
        if match is None:
            continue
        depth = len(match.group(1)) // 4 + (1 if "──" in line else 0)
        del stack[depth:]
        parents[match.group(2)] = stack[-1] if stack else None
        stack.append(match.group(2))
    return parents


def test_every_error_class_is_listed_in_all() -> None:
    assert sorted(errors.__all__) == [cls.__name__ for cls in ERROR_CLASSES]


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_class_is_exported_from_checkflow(cls: type) -> None:
    assert getattr(checkflow, cls.__name__) is cls
    assert cls.__name__ in checkflow.__all__


def test_the_docstring_draws_exactly_the_classes_that_exist() -> None:
    assert sorted(drawn_tree()) == [cls.__name__ for cls in ERROR_CLASSES]


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda cls: cls.__name__)
def test_the_docstring_draws_each_class_under_its_real_parent(cls: type) -> None:
    bases = [b.__name__ for b in cls.__bases__ if issubclass(b, errors.CheckflowError)]
    drawn = drawn_tree()[cls.__name__]
    assert [drawn] == (bases or [None])
