"""The active-run guard: at most one run per checkpoint in this process.

A run holds the guard for (storage identity, checkpoint id), or for the checkpoint object when
it has no storage, so two objects loaded from one storage are refused too. Ownership travels
in a ``ContextVar``: the task that entered ``active_run`` and every task it spawns may commit;
anyone else is refused with ``CheckpointInUseError``. This module never touches storage.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Hashable, Iterator
from typing import TYPE_CHECKING

from checkflow.errors import CheckpointInUseError

if TYPE_CHECKING:
    from checkflow.checkpoints._checkpoint import Checkpoint

__all__ = ["active_run", "check_not_in_use"]

# guard key -> the token of the run holding it
_held: dict[Hashable, object] = {}
# the runs this context (task and its children) owns: guard key -> token
_owned: contextvars.ContextVar[dict[Hashable, object]] = contextvars.ContextVar(
    "checkflow_active_runs",
    default={},  # noqa: B039 - never mutated, only replaced
)


def _key(checkpoint: Checkpoint) -> Hashable:
    storage = checkpoint.checkpoint_storage
    if storage is None:
        return ("checkpoint", id(checkpoint))
    return ("storage", id(storage), checkpoint.checkpoint_id)


def check_not_in_use(checkpoint: Checkpoint, action: str) -> None:
    """Raise ``CheckpointInUseError`` if a run this context does not own holds the guard."""
    key = _key(checkpoint)
    token = _held.get(key)
    if token is not None and _owned.get().get(key) is not token:
        raise CheckpointInUseError(checkpoint.checkpoint_id, action)


def is_active(checkpoint: Checkpoint) -> bool:
    """Whether any run holds the guard for this checkpoint."""
    return _key(checkpoint) in _held


@contextlib.contextmanager
def active_run(checkpoint: Checkpoint) -> Iterator[None]:
    """Hold the checkpoint's run guard for the duration of the block.

    Raises ``CheckpointInUseError`` when a run already holds it (also a run in this task).
    Inside the block, ``commit_snapshot()`` works from this task and the tasks it creates;
    ``restart_from()``, ``commit_snapshot()`` and ``active_run()`` from elsewhere raise.
    """
    key = _key(checkpoint)
    if key in _held:
        raise CheckpointInUseError(checkpoint.checkpoint_id, "start another run on")
    token = object()
    _held[key] = token
    reset = _owned.set({**_owned.get(), key: token})
    try:
        yield
    finally:
        del _held[key]
        with contextlib.suppress(ValueError):  # exited from another context: nothing to reset
            _owned.reset(reset)
