"""The one way an optional import fails: ``MissingExtraError``, naming the extra to install.

Every module that imports an optional dependency (starlette, uvicorn, ag_ui, a2a,
azure.cosmos, aiohttp, opentelemetry, httpx, ...) wraps those imports in
``requires_extra(EXTRA, WHAT)``, so a missing package says ``pip install 'checkflow[EXTRA]'``
instead of a bare ``No module named ...``. This module must never import anything optional.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["MissingExtraError", "requires_extra"]


class MissingExtraError(ModuleNotFoundError):
    """An optional dependency is not installed; ``extra`` is the extra that installs it.

    A ``ModuleNotFoundError`` (so an ``ImportError``) whose ``name`` is the missing module,
    as Python's own would be, so ``except ImportError`` and ``exc.name`` keep working.
    """

    def __init__(self, what: str, extra: str, *, name: str | None) -> None:
        super().__init__(
            f"{what} needs the {extra!r} extra ({name} is not installed): "
            f"pip install 'checkflow[{extra}]'",
            name=name,
        )
        self.extra = extra


@contextlib.contextmanager
def requires_extra(extra: str, what: str) -> Iterator[None]:
    """Turn a third-party module missing inside the block into a ``MissingExtraError``.

    ``what`` is what the user asked for (``checkflow.adapters.foundry``, ``serve``, ...). A
    missing ``checkflow`` module is a bug, not a missing extra, and propagates as it is; a
    ``MissingExtraError`` from an inner guard is renamed to this (outer) extra, which is
    the one the user asked for.
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] == "checkflow":
            raise
        raise MissingExtraError(what, extra, name=exc.name) from exc
