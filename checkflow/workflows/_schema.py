"""The JSON Schema an answer to a pending request must satisfy, for any annotation we accept.

msgspec computes it for builtins, msgspec Structs, dataclasses, TypedDicts, enums and unions;
pydantic models answer through their own ``model_json_schema()``. This module must never
import pydantic (a model is recognised by its method) and never raise for an odd annotation.
"""

from __future__ import annotations

import typing
from typing import Any

import msgspec

from checkflow.workflows._typing import memoized

__all__ = ["response_schema"]


def response_schema(response_type: Any) -> dict[str, Any]:
    """The JSON Schema of ``response_type`` (``{}`` when anything goes or none can be made)."""
    if response_type is typing.Any or response_type is object or response_type is None:
        return {}
    model_schema = getattr(response_type, "model_json_schema", None)
    if callable(model_schema):
        try:
            schema = model_schema()
        except Exception:  # a model that cannot describe itself still has answers
            return {}
        return schema if isinstance(schema, dict) else {}
    return msgspec.json.decode(_schema_json(response_type), type=dict[str, Any])  # fresh


@memoized
def _schema_json(response_type: Any) -> bytes:
    """msgspec's schema of ``response_type``, encoded: computing it costs far more than
    decoding it again, and a view names it on every answer that waits for a response."""
    try:
        return msgspec.json.encode(msgspec.json.schema(response_type))
    except (TypeError, ValueError):  # no schema can be made: cached as "anything goes"
        return b"{}"
