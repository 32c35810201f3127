"""What an AG-UI client may write of the workflow's shared state (``RunAgentInput.state``).

AG-UI clients send their whole copy of the state with every run, most of it just the last
``STATE_SNAPSHOT`` echoed back. So a key is *written* only when its value differs from the
shared state the run starts from; only written keys are checked: each must be declared
writable, and its value must decode as the key's declared type (msgspec, JSON semantics).
A key missing from the client's state is left as it is (a client cannot delete one). This
module must never do I/O or touch a host: the adapter passes the base state in and hands the
writes to ``Host.run``, which commits them with the turn's input.
"""

from __future__ import annotations

import datetime
import decimal
import types
import typing
import uuid
from collections.abc import Mapping
from typing import Any

import msgspec

from checkflow.agents import CLIENT_TOOLS_KEY
from checkflow.errors import SharedStateWriteError
from checkflow.state import is_registered

__all__ = ["StateWrites"]

_encode = msgspec.json.Encoder().encode
_NATIVE = frozenset({str, int, float, bool, type(None), bytes, list, dict, tuple, set, frozenset,
                     datetime.datetime, datetime.date, datetime.time, datetime.timedelta,
                     uuid.UUID, decimal.Decimal, object})
"""What the state codec stores unregistered (``Any`` is ``object``)."""


class StateWrites:
    """The shared-state keys a client may write, each with the type its value must have.

    ``writable`` maps a key to any type msgspec decodes JSON into (``str``, ``list[int]``,
    a ``Struct``, a dataclass, a ``Literal``...); the decoded value is what the workflow
    reads with ``ctx.get_state``, so each class in it must be one the state codec stores
    (builtins, or registered with ``checkflow.state.register_state_type``). Raises
    ``ValueError`` naming a key that is not a string, whose type msgspec cannot decode, or
    that holds a class the codec would refuse at the commit, and for ``CLIENT_TOOLS_KEY``
    (the adapter writes it from ``RunAgentInput.tools``).
    """

    def __init__(self, writable: Mapping[str, Any]) -> None:
        self._decoders: dict[str, msgspec.json.Decoder[Any]] = {}
        for key, tp in writable.items():
            if not isinstance(key, str) or not key:
                raise ValueError(f"a writable shared-state key must be a non-empty string, "
                                 f"not {key!r}")
            if key == CLIENT_TOOLS_KEY:
                raise ValueError(f"{key!r} is not writable: the adapter writes it from the "
                                 "run's tools")
            try:
                self._decoders[key] = msgspec.json.Decoder(tp)
            except TypeError as exc:
                raise ValueError(f"writable shared-state key {key!r}: msgspec cannot decode "
                                 f"its type {tp!r} ({exc})") from exc
            unstorable = _unregistered(tp)
            if unstorable is not None:
                raise ValueError(
                    f"writable shared-state key {key!r}: {unstorable.__qualname__} is not a "
                    "state type; register it with checkflow.state.register_state_type")

    @property
    def keys(self) -> frozenset[str]:
        """The keys a client may write."""
        return frozenset(self._decoders)

    def writes(self, state: Any, base: Mapping[str, Any]) -> dict[str, Any]:
        """The keys ``state`` (the client's, JSON) changes from ``base`` (the shared state as
        JSON), decoded to their declared types; ``{}`` when it changes nothing.

        Raises ``ValueError`` for a state that is not an object, ``SharedStateWriteError``
        for a changed key that is not writable and for a value that does not fit its type.
        """
        if state is None:
            return {}
        if not isinstance(state, Mapping):
            raise ValueError(f"state must be an object, not {type(state).__name__}")
        changed: dict[str, Any] = {}
        for key, value in state.items():
            if key in base and _same_json(base[key], value):
                continue
            decoder = self._decoders.get(key)
            if decoder is None:
                allowed = ", ".join(sorted(self._decoders)) or "none"
                raise SharedStateWriteError(
                    key, f"it is not a key clients may write (writable: {allowed})")
            try:
                changed[key] = decoder.decode(_encode(value))
            except msgspec.ValidationError as exc:
                reason, field = _split(str(exc))
                raise SharedStateWriteError(key, reason, field=field) from None
        return changed


def _unregistered(tp: Any) -> type | None:
    """The first class in annotation ``tp`` the state codec would refuse, else ``None``."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return None
    if origin is typing.Annotated:
        return _unregistered(typing.get_args(tp)[0])
    if origin is not None:
        if (isinstance(origin, type) and origin is not types.UnionType
                and origin not in _NATIVE and not is_registered(origin)):
            return origin
        return next((found for arg in typing.get_args(tp)
                     if arg is not Ellipsis and (found := _unregistered(arg)) is not None), None)
    if not isinstance(tp, type) or tp in _NATIVE or typing.is_typeddict(tp):
        return None
    return None if is_registered(tp) else tp


def _same_json(left: Any, right: Any) -> bool:
    """Equal as JSON: ``1`` is ``1.0`` (a JavaScript client cannot tell), ``true`` is not
    ``1`` (Python's ``==`` says it is)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(_same_json(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(map(_same_json, left, right))
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    return type(left) is type(right) and bool(left == right)


def _split(message: str) -> tuple[str, str | None]:
    """msgspec's ``"Expected `int`, got `str` - at `$[0]`"`` as (reason, ``$[0]``)."""
    reason, sep, where = message.rpartition(" - at ")
    if not sep:
        return message, None
    return reason, where.strip("`")
