"""``STATE_DELTA``: the RFC 6902 JSON Patch from the last state a stream sent to the next.

The patch is made by ``jsonpatch`` (a maintained implementation of RFC 6902; no patching of
our own), then checked: applied to the previous state it must give exactly the new one (as
JSON: ``true`` is not ``1``), and it must be smaller than the snapshot it replaces, else the
stream sends a snapshot. This module must never do I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonpatch
import msgspec

__all__ = ["state_patch"]

_canonical = msgspec.json.Encoder(order="sorted").encode
_size = msgspec.json.Encoder().encode


def state_patch(previous: Mapping[str, Any], current: Mapping[str, Any]
                ) -> list[dict[str, Any]] | None:
    """The JSON Patch from ``previous`` to ``current`` when it is smaller than ``current``
    itself, else ``None`` (send a snapshot). ``[]`` when nothing changed."""
    target = _canonical(current)
    if _canonical(previous) == target:
        return []
    operations: list[dict[str, Any]] = jsonpatch.make_patch(previous, current).patch
    if len(_size(operations)) >= len(_size(current)):
        return None
    try:
        applied = jsonpatch.apply_patch(previous, operations)
    except jsonpatch.JsonPatchException:
        return None
    return operations if _canonical(applied) == target else None
