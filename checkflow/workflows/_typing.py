"""Type annotations as the engine reads them: names, runtime matching and edge compatibility.

Handlers declare what they accept and emit through ordinary annotations; this module turns
those annotations into stable names (for the graph signature and for response types stored
in snapshots), answers "does this value fit this annotation" at dispatch time and "can this
output reach that input" at build time. It must never import the runner or hold state.
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, Union, get_args, get_origin

import msgspec

__all__ = [
    "UNCHECKED",
    "annotation_members",
    "compatible",
    "memoized",
    "most_specific_first",
    "named_classes",
    "specificity",
    "type_name",
    "value_matches",
]

#: Marker for "no declaration": a bare ``WorkflowContext`` or an unannotated parameter.
UNCHECKED: Any = typing.Any

_F = TypeVar("_F", bound=Callable[..., Any])


def memoized(function: _F) -> _F:
    """``function`` remembered per arguments: a pure function of annotations (and classes)
    that dispatch asks again for every message. Unhashable arguments are answered afresh
    (so is a call that raised ``TypeError``: a pure function raises it again)."""
    cached = functools.lru_cache(maxsize=1024)(function)

    @functools.wraps(function)
    def call(*args: Any) -> Any:
        try:
            return cached(*args)
        except TypeError:  # an unhashable argument (hashing once, not twice, when it is not)
            return function(*args)

    call.cache_info = cached.cache_info  # type: ignore[attr-defined]
    return typing.cast(_F, call)


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _is_never(tp: Any) -> bool:
    return tp is typing.Never or tp is typing.NoReturn


def annotation_members(tp: Any) -> tuple[Any, ...]:
    """The alternatives of a union (flattened), or the annotation itself."""
    if _is_union(tp):
        return tuple(m for arg in get_args(tp) for m in annotation_members(arg))
    if tp is None:
        return (type(None),)
    return (tp,)


@memoized
def type_name(tp: Any) -> str:
    """A process-independent name for an annotation: ``module.QualName`` with generic args.

    Builtins go by their bare name (``int``, ``dict[str, int]``); never an id or an address.
    """
    if tp is typing.Any:
        return "typing.Any"
    if tp is None or tp is type(None):
        return "None"
    if _is_never(tp):
        return "typing.Never"
    if _is_union(tp):
        return " | ".join(sorted({type_name(m) for m in annotation_members(tp)}))
    origin = get_origin(tp)
    if origin is typing.Literal:
        return "typing.Literal[" + ", ".join(repr(a) for a in get_args(tp)) + "]"
    if origin is not None:
        args = ", ".join(type_name(a) for a in get_args(tp))
        return f"{type_name(origin)}[{args}]"
    if isinstance(tp, typing.TypeVar):
        return f"~{tp.__name__}"
    if isinstance(tp, type):
        if tp.__module__ == "builtins":
            return tp.__qualname__
        return f"{tp.__module__}.{tp.__qualname__}"
    if isinstance(tp, str):
        return tp
    if tp is Ellipsis:
        return "..."
    raise TypeError(f"cannot name the annotation {tp!r}")


def builtin_type(name: str) -> type | None:
    """The builtin class a stored name refers to (``"bool"`` -> ``bool``), if any."""
    found = getattr(builtins, name, None)
    return found if isinstance(found, type) else None


def _class_of(tp: Any) -> type | None:
    origin = get_origin(tp)
    if origin is not None:
        return origin if isinstance(origin, type) else None
    return tp if isinstance(tp, type) else None


def value_matches(value: Any, tp: Any) -> bool:
    """Whether ``value`` fits the annotation ``tp`` (container items checked one level deep)."""
    if type(tp) is type:  # a plain class, the common case (``object`` and ``NoneType`` too)
        return isinstance(value, tp)
    if tp is typing.Any:
        return True
    if _is_union(tp):
        return any(value_matches(value, m) for m in annotation_members(tp))
    if tp is None:  # (``NoneType`` is a plain class: answered above)
        return value is None
    origin = get_origin(tp)
    if origin is typing.Literal:
        return value in get_args(tp)
    if origin is None:
        return isinstance(tp, type) and isinstance(value, tp)
    if not (isinstance(origin, type) and isinstance(value, origin)):
        return False
    return _items_match(value, origin, get_args(tp))


def _items_match(value: Any, origin: type, args: tuple[Any, ...]) -> bool:
    if origin in (list, set, frozenset) and args:
        return all(value_matches(item, args[0]) for item in value)
    if origin is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(value_matches(item, args[0]) for item in value)
        return len(args) == len(value) and all(map(value_matches, value, args))
    if origin is dict and len(args) == 2:
        return all(
            value_matches(k, args[0]) and value_matches(v, args[1]) for k, v in value.items()
        )
    return True


def specificity(value: Any, tp: Any) -> int:
    """How closely ``tp`` fits ``value``'s class: 0 is exact, larger is looser."""
    return _rank(type(value), tp)


@memoized
def _rank(cls_of_value: type, tp: Any) -> int:
    mro = cls_of_value.__mro__
    best = len(mro) + 1
    for member in annotation_members(tp):
        cls = _class_of(member)
        if member is typing.Any or cls is None:
            rank = len(mro) + 1
        elif cls in mro:
            rank = mro.index(cls)
        else:
            rank = len(mro)
        best = min(best, rank)
    return best


@memoized
def compatible(out_tp: Any, in_tp: Any) -> bool:
    """Whether a value declared as ``out_tp`` can be accepted by a handler of ``in_tp``."""
    if out_tp is typing.Any or in_tp is typing.Any or in_tp is object:
        return True
    if _is_never(out_tp):
        return False
    outs, ins = annotation_members(out_tp), annotation_members(in_tp)
    if len(outs) > 1 or len(ins) > 1:
        return any(compatible(o, i) for o in outs for i in ins)
    if get_origin(in_tp) is typing.Literal or get_origin(out_tp) is typing.Literal:
        return _literal_compatible(out_tp, in_tp)
    out_cls, in_cls = _class_of(out_tp), _class_of(in_tp)
    if out_cls is None or in_cls is None:
        return True  # TypeVars and other exotic forms: not checkable, so not refused
    if not (issubclass(out_cls, in_cls) or issubclass(in_cls, out_cls)):
        return False
    out_args, in_args = get_args(out_tp), get_args(in_tp)
    if not out_args or not in_args or len(out_args) != len(in_args):
        return True
    return all(
        a is Ellipsis or b is Ellipsis or compatible(a, b)
        for a, b in zip(out_args, in_args, strict=True)
    )


def _literal_compatible(out_tp: Any, in_tp: Any) -> bool:
    if get_origin(out_tp) is typing.Literal:
        return any(value_matches(v, in_tp) for v in get_args(out_tp))
    return any(compatible(type(v), out_tp) for v in get_args(in_tp))


def _walk(tp: Any) -> Iterator[Any]:
    yield tp
    if get_origin(tp) is typing.Literal:
        return
    for arg in get_args(tp):
        yield from _walk(arg)


def named_classes(annotations: typing.Iterable[Any]) -> list[type]:
    """User classes named inside ``annotations``, and inside their fields, recursively:
    dataclasses, msgspec Structs and Enums."""
    found: dict[type, None] = {}
    pending = list(annotations)
    while pending:
        for tp in _walk(pending.pop()):
            if not isinstance(tp, type) or tp in found or tp.__module__ == "builtins":
                continue
            if issubclass(tp, enum.Enum):
                found[tp] = None
            elif dataclasses.is_dataclass(tp) or issubclass(tp, msgspec.Struct):
                found[tp] = None
                pending.extend(_field_types(tp))
    return list(found)


def _field_types(cls: type) -> list[Any]:
    try:
        return list(typing.get_type_hints(cls).values())
    except Exception:  # unresolvable field annotations: those fields need explicit registration
        return []


def callable_name(fn: Callable[..., Any] | None) -> str | None:
    """``module.qualname`` of a function (conditions, selectors), stable across processes."""
    if fn is None:
        return None
    module = getattr(fn, "__module__", None) or ""
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}.{qualname}"


def most_specific_first(declared: list[Any]) -> tuple[Any, ...]:
    """Declaration order, except that each annotation moves before any strictly broader one."""
    ordered: list[Any] = []
    for annotation in declared:
        broader = (i for i, placed in enumerate(ordered) if _narrower(annotation, placed))
        ordered.insert(next(broader, len(ordered)), annotation)
    return tuple(ordered)


def _narrower(a: Any, b: Any) -> bool:
    """Whether every message ``a`` accepts is accepted by ``b`` but not the other way round."""
    return _within(a, b) and not _within(b, a)


def _within(a: Any, b: Any) -> bool:
    """Whether each member of ``a`` is a (sub)class of some member of ``b`` (``Any`` holds all)."""
    outer = annotation_members(b)
    if any(m is typing.Any or m is object for m in outer):
        return True
    outer_classes = [_class_of(m) for m in outer]
    for member in annotation_members(a):
        cls = _class_of(member)
        if member is typing.Any or member is object or cls is None:
            return False
        if not any(o is not None and issubclass(cls, o) for o in outer_classes):
            return False
    return True
