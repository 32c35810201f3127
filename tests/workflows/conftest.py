"""Fixtures for the engine tests: storages to run against and a structural fingerprint."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import pytest

from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage


@pytest.fixture(params=["memory", "file"])
def storage(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    """Each storage-backed engine test runs against memory and file storage."""
    if request.param == "memory":
        return InMemoryCheckpointStorage()
    return FileCheckpointStorage(tmp_path / "checkpoints")


def fingerprint(root: Any) -> Any:
    """A deep, address-free description of everything reachable from ``root``.

    Walks instance dicts and slots, containers and mapping proxies; functions and classes are
    named, never entered. Equal fingerprints mean no object in the graph changed.
    """
    seen: dict[int, int] = {}

    def walk(obj: Any) -> Any:
        if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
            return obj
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            return ("callable", getattr(obj, "__qualname__", repr(type(obj))))
        if isinstance(obj, types.MethodType):
            return ("method", obj.__func__.__qualname__, walk(obj.__self__))
        if id(obj) in seen:
            return ("ref", seen[id(obj)])
        seen[id(obj)] = len(seen)
        kind = type(obj).__qualname__
        if isinstance(obj, (dict, types.MappingProxyType)):
            return (kind, sorted((repr(k), walk(v)) for k, v in obj.items()))
        if isinstance(obj, (list, tuple)):
            return (kind, [walk(v) for v in obj])
        if isinstance(obj, (set, frozenset)):
            return (kind, sorted(repr(walk(v)) for v in obj))
        fields: dict[str, Any] = dict(getattr(obj, "__dict__", {}))
        for klass in type(obj).__mro__:
            for name in getattr(klass, "__slots__", ()):
                if hasattr(obj, name):
                    fields[name] = getattr(obj, name)
        return (kind, sorted((k, walk(v)) for k, v in fields.items()))

    return walk(root)


@pytest.fixture
def take_fingerprint() -> Callable[[Any], Any]:
    return fingerprint
