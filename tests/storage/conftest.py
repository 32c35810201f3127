"""Fixtures for the storage tests: every backend behind one ``checkpoint_storage`` fixture.

To add a backend to the contract suite, add a ``BackendFactory`` to ``BACKENDS``: it gets the
pytest request (for other fixtures such as ``tmp_path`` or an emulator) and returns a pair of
callables: ``open()`` builds a storage, and calling it again must reach the SAME stored data
(a fresh instance, as another process would), which the reload tests rely on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from checkflow.checkpoints import CheckpointStorage, Format
from checkflow.storage import FileCheckpointStorage, InMemoryCheckpointStorage

State = dict[str, Any]
OpenStorage = Callable[[], CheckpointStorage]
BackendFactory = Callable[[pytest.FixtureRequest], OpenStorage]


def _memory(request: pytest.FixtureRequest) -> OpenStorage:
    storage = InMemoryCheckpointStorage()
    return lambda: storage  # memory has no second view: the same instance is the data


def _file(request: pytest.FixtureRequest) -> OpenStorage:
    root = request.getfixturevalue("tmp_path") / "checkpoints"
    return lambda: FileCheckpointStorage(root)


def _file_msgpack(request: pytest.FixtureRequest) -> OpenStorage:
    root = request.getfixturevalue("tmp_path") / "checkpoints"
    return lambda: FileCheckpointStorage(root, format="msgpack")


def _cosmos(request: pytest.FixtureRequest, format: Format = "json",
            fixture: str = "cosmos_container") -> OpenStorage:
    from checkflow.storage.cosmos import CosmosCheckpointStorage

    container = request.getfixturevalue(fixture)  # the emulator's (tests/cosmos_emulator.py)
    return lambda: CosmosCheckpointStorage(container, format=format)  # own ETag cache each


def _cosmos_account(request: pytest.FixtureRequest) -> OpenStorage:
    return _cosmos(request, fixture="cosmos_account_container")  # opt-in: a real account


def _cosmos_msgpack(request: pytest.FixtureRequest) -> OpenStorage:
    return _cosmos(request, format="msgpack")


BACKENDS: dict[str, BackendFactory] = {
    "memory": _memory,
    "file": _file,
    "file-msgpack": _file_msgpack,
    "cosmos": _cosmos,
    "cosmos-msgpack": _cosmos_msgpack,
    "cosmos-account": _cosmos_account,
}


@pytest.fixture(params=list(BACKENDS))
def open_checkpoint_storage(request: pytest.FixtureRequest) -> OpenStorage:
    """Opens the parametrized backend; each call is a fresh view of the same data."""
    return BACKENDS[request.param](request)


@pytest.fixture
def configured_format(
    request: pytest.FixtureRequest, open_checkpoint_storage: OpenStorage
) -> Format:
    """The state format the parametrized backend was built with ("...-msgpack": msgpack)."""
    backend: str = request.node.callspec.params["open_checkpoint_storage"]
    return "msgpack" if backend.endswith("-msgpack") else "json"


@pytest.fixture
def checkpoint_storage(open_checkpoint_storage: OpenStorage) -> CheckpointStorage:
    """One storage of each backend in ``BACKENDS``."""
    return open_checkpoint_storage()


def four_buckets(n: int = 0, **extra: Any) -> State:
    messages: State = dict.fromkeys(("input", "pending", "output"), ())
    return {"workflow_state": {"n": n, **extra}, "executor_states": {}} | {
        "edge_states": {},
        "messages": messages,
    }


@pytest.fixture
def make_state() -> Callable[..., State]:
    """A valid snapshot state (the four buckets) whose ``workflow_state["n"]`` is ``n``."""
    return four_buckets
