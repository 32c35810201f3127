"""Converting a JSON value to a declared type, and saying where it did not fit.

One conversion for messages and answers: pydantic models (recognised by ``model_validate``,
never by importing pydantic) validate themselves, ``from_dict`` classes construct themselves,
everything else goes through ``msgspec.convert(strict=True)``. ``validation_detail`` turns a
failure into the field (a JSON path, ``$.items[0].sku``) and the reason, for a 422 a client
can act on. This module must never guess a type that was not declared.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

__all__ = ["convert_value", "is_model", "validation_detail"]


def is_model(tp: Any) -> bool:
    """Whether ``tp`` is a pydantic-style model class (it has ``model_validate``)."""
    return isinstance(tp, type) and callable(getattr(tp, "model_validate", None))


def convert_value(value: Any, tp: Any) -> Any:
    """``value`` as a ``tp``; raises ``msgspec.ValidationError``, ``TypeError`` or
    ``ValueError`` (a pydantic ``ValidationError`` is one) when it does not fit."""
    if is_model(tp):
        if isinstance(value, tp):
            return value
        return tp.model_validate(value)
    from_dict = getattr(tp, "from_dict", None)
    if callable(from_dict) and not dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise TypeError(f"{getattr(tp, '__name__', tp)}.from_dict needs an object, "
                            f"not {type(value).__name__}")
        return from_dict(value)
    return msgspec.convert(value, tp, strict=True)


def _path(location: Any) -> str:
    path = "$"
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def validation_detail(exc: BaseException) -> tuple[str | None, str]:
    """``(field, reason)`` of a failed conversion: the JSON path (``None`` if unknown)."""
    errors = getattr(exc, "errors", None)
    if callable(errors) and not isinstance(exc, msgspec.ValidationError):
        try:
            first = errors()[0]
            return _path(first.get("loc", ())), str(first.get("msg", exc))
        except (TypeError, IndexError, AttributeError, KeyError):
            pass
    text = str(exc)
    if isinstance(exc, msgspec.ValidationError):
        reason, sep, where = text.rpartition(" - at `")
        if sep:
            return where.rstrip("`"), reason
        return "$", text
    return None, text
