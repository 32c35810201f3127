"""Executors as definitions: ``Executor``, ``@handler``, ``@response_handler``, ``@executor``.

An executor object is part of the immutable workflow definition. It declares handlers by
annotation and must never keep per-run data: everything a run needs goes through the
``WorkflowContext``. This module also reads the handler annotations into ``HandlerSpec``s
(what a handler accepts, sends and yields) that dispatch and ``build()`` use.
"""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, get_args, get_origin, overload

from checkflow.errors import WorkflowValidationError
from checkflow.workflows._context import WorkflowContext
from checkflow.workflows._typing import (
    UNCHECKED,
    annotation_members,
    compatible,
    specificity,
    type_name,
    value_matches,
)

__all__ = ["Executor", "executor", "handler", "response_handler"]

F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__checkflow_handler__"


def handler(func: F) -> F:
    """Mark ``async def m(self, message: T, ctx: WorkflowContext)`` as a message handler.

    The message type comes from the annotation; an executor with several handlers dispatches
    each message to the most specific one.
    """
    setattr(func, _MARK, "message")
    return func


def response_handler(func: F) -> F:
    """Mark ``async def m(self, original_request: Req, response: Resp, ctx)`` as the
    handler for answers to this executor's ``ctx.request_info`` calls."""
    setattr(func, _MARK, "response")
    return func


class Executor:
    """A node of a workflow graph: a set of handlers under a stable ``id``.

    Subclass it and mark methods with ``@handler`` / ``@response_handler``. Instances are
    definitions shared by every run: keep per-run data in ``ctx.executor_state``.
    """

    def __init__(self, id: str) -> None:
        if not isinstance(id, str) or not id:
            raise ValueError(f"an executor id must be a non-empty string, got {id!r}")
        self._id = id

    @property
    def id(self) -> str:
        """The executor's id, unique within a workflow; it keys ``executor_states``."""
        return self._id

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self._id!r})"

    def _handler_functions(self) -> list[tuple[str, str, Callable[..., Any]]]:
        """(kind, name, bound method) of every marked method, subclass overrides first."""
        seen: set[str] = set()
        found: list[tuple[str, str, Callable[..., Any]]] = []
        for klass in type(self).__mro__:
            for name, member in vars(klass).items():
                if name in seen:
                    continue
                seen.add(name)
                kind = getattr(member, _MARK, None)
                if kind is not None:
                    found.append((kind, name, getattr(self, name)))
        return found

    def signature_extra(self) -> dict[str, Any]:
        """Extra, process-independent facts for the graph signature (nested workflows)."""
        return {}

    def check_response(self, request: Any, response: Any) -> None:
        """Refuse an answer to one of this executor's requests before it is accepted.

        Called with the request's data and the answer converted to its ``response_type``;
        a ``ValueError`` raised here refuses the whole batch of answers as an
        ``InvalidResponseError`` naming the request, and nothing is committed. The default
        accepts everything the type allows.
        """


class FunctionExecutor(Executor):
    """An executor wrapping one function; built by ``@executor``."""

    def __init__(self, func: Callable[..., Any], *, id: str | None = None) -> None:
        super().__init__(id or str(getattr(func, "__name__", "")))
        self._func = func
        self._takes_ctx = len(inspect.signature(func).parameters) >= 2
        self._is_async = inspect.iscoroutinefunction(func)

    async def _invoke(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        args = (message, ctx) if self._takes_ctx else (message,)
        if self._is_async:
            result = await self._func(*args)
        else:
            result = await asyncio.to_thread(self._func, *args)
        if not self._takes_ctx and result is not None:
            await ctx.send_message(result)

    def _handler_functions(self) -> list[tuple[str, str, Callable[..., Any]]]:
        return [("message", getattr(self._func, "__qualname__", self.id), self._func)]


@overload
def executor(func: Callable[..., Any], /) -> FunctionExecutor: ...
@overload
def executor(
    *, id: str | None = None
) -> Callable[[Callable[..., Any]], FunctionExecutor]: ...
def executor(
    func: Callable[..., Any] | None = None, /, *, id: str | None = None
) -> FunctionExecutor | Callable[[Callable[..., Any]], FunctionExecutor]:
    """Turn ``async def f(message: T, ctx: WorkflowContext)`` into an executor.

    ``f(message)`` alone also works: a non-``None`` return value is sent on. Synchronous
    functions run in a worker thread. ``id`` defaults to the function's name.
    """

    def wrap(f: Callable[..., Any]) -> FunctionExecutor:
        return FunctionExecutor(f, id=id)

    return wrap(func) if func is not None else wrap


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    """One handler as declared: what it accepts, sends and yields."""

    name: str
    kind: str  # "message" or "response"
    call: Callable[..., Awaitable[None]]
    input_type: Any  # the message type, or the response type for response handlers
    request_type: Any  # response handlers only: the original request's type
    output_types: Any  # UNCHECKED or a tuple of annotations
    workflow_output_types: Any

    def describe(self) -> dict[str, Any]:
        def names(tps: Any) -> Any:
            return "unchecked" if tps is UNCHECKED else sorted(type_name(t) for t in tps)

        return {
            "name": self.name,
            "kind": self.kind,
            "input": type_name(self.input_type),
            "request": None if self.request_type is None else type_name(self.request_type),
            "outputs": names(self.output_types),
            "workflow_outputs": names(self.workflow_output_types),
        }


def _context_types(annotation: Any) -> tuple[Any, Any]:
    """(output types, workflow output types) declared by a ctx annotation."""
    if annotation is inspect.Parameter.empty or annotation is WorkflowContext:
        return UNCHECKED, UNCHECKED
    if get_origin(annotation) is not WorkflowContext:
        raise TypeError(f"the context parameter must be annotated WorkflowContext[...], "
                        f"not {type_name(annotation)}")
    out, wf_out = get_args(annotation)

    def members(tp: Any) -> Any:
        if tp is typing.Any:
            return UNCHECKED
        if tp is typing.Never or tp is typing.NoReturn:
            return ()
        return annotation_members(tp)

    return members(out), members(wf_out)


def _spec_for(executor_obj: Executor, kind: str, name: str, fn: Callable[..., Any]) -> HandlerSpec:
    where = f"{type(executor_obj).__qualname__}.{name} (executor {executor_obj.id!r})"
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:  # NameError, TypeError from unresolvable string annotations
        raise WorkflowValidationError(f"cannot resolve the annotations of {where}: {exc}") from exc
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    function = executor_obj if isinstance(executor_obj, FunctionExecutor) else None
    is_function = function is not None
    arity_ok = len(params) in (1, 2) if is_function else len(params) == (
        3 if kind == "response" else 2)
    if not arity_ok:
        shape = "(original_request, response, ctx)" if kind == "response" else "(message, ctx)"
        raise WorkflowValidationError(
            f"{where} must take {shape}, it takes {len(params)} parameters")
    typed = params[:2] if kind == "response" else params[:1]
    for param in typed:
        if param.name not in hints:
            raise WorkflowValidationError(
                f"{where}: parameter {param.name!r} needs a type annotation (it selects "
                "which messages the handler receives)")
    first = hints[params[0].name]
    if function is not None and len(params) == 1:
        returned = hints.get("return", typing.Any)
        none = returned is None or returned is type(None)
        outs = UNCHECKED if returned is typing.Any else () if none else annotation_members(returned)
        return HandlerSpec(name, kind, function._invoke, first, None, outs, ())
    ctx_type = hints.get(params[-1].name, inspect.Parameter.empty)
    try:
        outs, wf_outs = _context_types(ctx_type)
    except TypeError as exc:
        raise WorkflowValidationError(f"{where}: {exc}") from exc
    if function is not None:
        return HandlerSpec(name, kind, function._invoke, first, None, outs, wf_outs)
    if kind == "response":
        return HandlerSpec(name, kind, fn, hints[params[1].name], first, outs, wf_outs)
    return HandlerSpec(name, kind, fn, first, None, outs, wf_outs)


@dataclass(frozen=True, slots=True)
class ExecutorSpec:
    """An executor with its handlers read from annotations (built once by ``build()``)."""

    executor: Executor
    handlers: tuple[HandlerSpec, ...]
    response_handlers: tuple[HandlerSpec, ...]
    cacheable: bool  # dispatch depends only on the message's class

    @classmethod
    def inspect(cls, executor_obj: Executor) -> ExecutorSpec:
        specs = [_spec_for(executor_obj, kind, name, fn)
                 for kind, name, fn in executor_obj._handler_functions()]
        handlers = tuple(s for s in specs if s.kind == "message")
        responses = tuple(s for s in specs if s.kind == "response")
        cacheable = all(
            isinstance(m, type) or m is typing.Any
            for s in handlers for m in annotation_members(s.input_type)
        )
        return cls(executor_obj, handlers, responses, cacheable)

    @property
    def input_types(self) -> tuple[Any, ...]:
        return tuple(s.input_type for s in self.handlers)

    def output_types(self) -> Any:
        """Union of declared message types, or UNCHECKED if any handler is unchecked."""
        found: list[Any] = []
        for spec in (*self.handlers, *self.response_handlers):
            if spec.output_types is UNCHECKED:
                return UNCHECKED
            found.extend(spec.output_types)
        return tuple(found)

    def find_handler(self, message: Any) -> HandlerSpec | None:
        """The most specific handler accepting ``message`` (declaration order breaks ties)."""
        best: HandlerSpec | None = None
        best_rank = 1 << 30
        for spec in self.handlers:
            if value_matches(message, spec.input_type):
                rank = specificity(message, spec.input_type)
                if rank < best_rank:
                    best, best_rank = spec, rank
        return best

    def find_response_handler(self, request: Any, response: Any) -> HandlerSpec | None:
        """The most specific response handler for this (original request, response) pair."""
        best: HandlerSpec | None = None
        best_rank = 1 << 30
        for spec in self.response_handlers:
            if value_matches(request, spec.request_type) and value_matches(
                response, spec.input_type
            ):
                rank = specificity(response, spec.input_type) + specificity(
                    request, spec.request_type)
                if rank < best_rank:
                    best, best_rank = spec, rank
        return best

    def accepts_response_type(self, request: Any, response_type: Any) -> bool:
        """Whether some response handler could take answers of ``response_type``."""
        return any(
            value_matches(request, spec.request_type)
            and compatible(response_type, spec.input_type)
            for spec in self.response_handlers
        )

    def describe(self) -> dict[str, Any]:
        obj = self.executor
        return {
            "id": obj.id,
            "type": type_name(type(obj)),
            "handlers": sorted((s.describe() for s in (*self.handlers, *self.response_handlers)),
                               key=lambda d: (d["kind"], d["name"])),
            "extra": obj.signature_extra(),
        }
