"""Function tools: a typed Python function the model may call, with its schema and its checks.

``@tool`` reads the function once: its name, the first paragraph of its docstring as the
description, and a JSON Schema of its parameters built by msgspec from the annotations
(``Annotated[int, msgspec.Meta(description=...)]`` documents a parameter; a pydantic model
describes and validates itself). The model's arguments are converted to the annotated types
before the function runs; a refusal is a ``ToolArgumentsError`` naming the argument, which the
tool loop hands back to the model. This module must never keep a call's result: the agent's
session does.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, overload

import msgspec

from checkflow.errors import ToolArgumentsError

__all__ = ["Approval", "FunctionTool", "ToolContext", "tool"]

Approval: TypeAlias = Literal["never", "always"] | Callable[[dict[str, Any]], bool]
"""When a call waits for a person: never, always, or when the predicate says so (it is given
the validated arguments, as JSON values)."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Given to a tool that declares a parameter of this type: the call it serves.

    ``call_id`` is stable across a resume, so a tool with side effects can pass it on as an
    idempotency key (a tool killed mid-call runs again: see docs/tools.md).
    """

    call_id: str
    tool_name: str


class FunctionTool:
    """A function the model can call: ``name``, ``description``, ``parameters`` (a JSON
    Schema), and the ``approval`` rule. ``await tool.invoke(arguments, call_id)`` validates
    and runs it (a sync function runs in a worker thread)."""

    def __init__(self, function: Callable[..., Any], *, name: str | None = None,
                 description: str | None = None, approval: Approval = "never") -> None:
        if not callable(function):
            raise TypeError(f"a tool wraps a function, not {type(function).__name__}")
        if approval not in ("never", "always") and not callable(approval):
            raise ValueError(f"approval must be 'never', 'always' or a predicate, not "
                             f"{approval!r}")
        self.function = function
        self.name = name or function.__name__
        if not self.name.replace("_", "").replace("-", "").isalnum() or len(self.name) > 64:
            raise ValueError(f"a tool name is 1-64 letters, digits, '_' or '-', not "
                             f"{self.name!r}")
        self.description = description if description is not None else _summary(function)
        self.approval = approval
        self._params, self._context_param = _parameters(function)
        self._struct = msgspec.defstruct(
            f"{self.name}_arguments",
            [(p.name, _msgspec_type(p.annotation), p.default) if p.default is not p.empty
             else (p.name, _msgspec_type(p.annotation)) for p in self._params],
            kw_only=True, forbid_unknown_fields=True)
        self.parameters = _schema(self._struct, self._params)
        self._is_async = inspect.iscoroutinefunction(function)
        functools.update_wrapper(self, function)

    def __repr__(self) -> str:
        return f"FunctionTool({self.name!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly, as if it were not a tool."""
        return self.function(*args, **kwargs)

    def definition(self) -> dict[str, Any]:
        """The Chat Completions tool definition."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}

    def needs_approval(self, arguments: Mapping[str, Any]) -> bool:
        """Whether this call (with validated ``arguments``) waits for a person."""
        if self.approval == "always":
            return True
        if self.approval == "never":
            return False
        return bool(self.approval(dict(arguments)))

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``arguments`` checked against the parameters, as JSON values (``ToolArgumentsError``
        naming the first wrong one)."""
        return typing.cast(dict[str, Any], _to_json(self._convert(arguments)))

    def _convert(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments, Mapping):
            raise ToolArgumentsError(self.name, "the arguments must be a JSON object")
        try:
            value = msgspec.convert(dict(arguments), self._struct, strict=False)
        except msgspec.ValidationError as exc:
            raise ToolArgumentsError(self.name, str(exc)) from None
        converted: dict[str, Any] = {}
        for param in self._params:
            item = getattr(value, param.name)
            if _is_model(param.annotation) and not isinstance(item, param.annotation):
                try:
                    item = param.annotation.model_validate(item)
                except Exception as exc:  # pydantic's ValidationError, without importing it
                    raise ToolArgumentsError(self.name, f"{exc} - at `$.{param.name}`"
                                             ) from None
            converted[param.name] = item
        return converted

    async def invoke(self, arguments: Mapping[str, Any], call_id: str) -> Any:
        """Validate ``arguments`` and run the function; its result as JSON values."""
        kwargs = self._convert(arguments)
        if self._context_param is not None:
            kwargs[self._context_param] = ToolContext(call_id, self.name)
        if self._is_async:
            result = await self.function(**kwargs)
        else:
            result = await asyncio.to_thread(self.function, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        return _to_json(result)


@overload
def tool(function: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(*, name: str | None = None, description: str | None = None,
         approval: Approval = "never") -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(function: Callable[..., Any] | None = None, /, *, name: str | None = None,
         description: str | None = None, approval: Approval = "never"
         ) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a typed function (sync or async) a tool: ``@tool`` or ``@tool(approval="always")``.

    ``approval`` is ``"never"`` (the default), ``"always"``, or a predicate on the validated
    arguments; a call that needs approval pauses the turn with a ``ToolApprovalRequest``.
    """
    def wrap(fn: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(fn, name=name, description=description, approval=approval)
    return wrap if function is None else wrap(function)


def _summary(function: Callable[..., Any]) -> str:
    doc = inspect.getdoc(function) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _parameters(function: Callable[..., Any]) -> tuple[list[inspect.Parameter], str | None]:
    """The parameters the model fills (annotated; ``Any`` when not), and the name of the one
    that takes a ``ToolContext``."""
    hints = typing.get_type_hints(function, include_extras=True)
    params: list[inspect.Parameter] = []
    context: str | None = None
    for param in inspect.signature(function).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {function.__name__!r}: *args and **kwargs cannot be "
                            "described to a model")
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            context = param.name
            continue
        params.append(param.replace(annotation=annotation))
    return params, context


def _is_model(annotation: Any) -> bool:
    """A pydantic model (recognised by its methods: this module never imports pydantic)."""
    return isinstance(annotation, type) and callable(getattr(annotation, "model_validate", None))


def _msgspec_type(annotation: Any) -> Any:
    return Any if _is_model(annotation) else annotation


def _schema(struct: type, params: list[inspect.Parameter]) -> dict[str, Any]:
    """The parameters' JSON Schema: an object with the struct's fields, definitions hoisted."""
    try:
        (_,), components = msgspec.json.schema_components([struct])
    except TypeError as exc:
        raise TypeError(f"{struct.__name__}: {exc}") from None
    body = dict(components.pop(struct.__name__, {}))
    body.pop("title", None)
    properties = dict(body.get("properties", {}))
    for param in params:
        if _is_model(param.annotation):
            model_schema = dict(param.annotation.model_json_schema())
            components.update(model_schema.pop("$defs", {}))
            properties[param.name] = model_schema
    result: dict[str, Any] = {"type": "object", "properties": properties,
                              "additionalProperties": False}
    if body.get("required"):
        result["required"] = body["required"]
    if components:
        result["$defs"] = components
    return result


def _to_json(result: Any) -> Any:
    """A value as JSON values (pydantic models, anywhere in it, through ``model_dump``)."""
    return msgspec.to_builtins(result, enc_hook=_dump_model)


def _dump_model(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    raise TypeError(f"a tool result must be JSON values, not {type(value).__name__}")
