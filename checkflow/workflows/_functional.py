"""Functional workflows: ``@workflow`` on an ``async def`` and ``@step`` on what it awaits.

A functional workflow is an ordinary ``Workflow`` of one executor that re-runs ("replays") the
function in every superstep. Completed steps are recorded in its executor state under
``<step name>#<call index>`` and return their recorded result on replay; the first unrecorded
step runs and ends the superstep, so there is a snapshot after the input and after every step,
in the same Checkpoint model and the same four buckets as any graph. ``ctx.request_info`` pauses
the run until ``run(responses=...)`` answers it. The function must be deterministic given its
input, step results and answers; side effects belong in steps. This module must never keep a
step result, an answer or a replay anywhere but the run's executor state.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import typing
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from checkflow.state import is_registered, register_state_type
from checkflow.workflows._builder import WorkflowBuilder
from checkflow.workflows._context import WorkflowContext
from checkflow.workflows._dynamic import HandlerFunctions, handler_function
from checkflow.workflows._executor import Executor
from checkflow.workflows._typing import builtin_type, callable_name, type_name

if TYPE_CHECKING:
    from checkflow.workflows._workflow import Workflow

__all__ = ["FunctionalContext", "FunctionalExecutor", "step", "workflow"]

P = ParamSpec("P")
R = TypeVar("R")

_INPUT, _STEPS, _ASKED, _ANSWERS, _OUTPUTS, _DONE = (
    "input",
    "steps",
    "asked",
    "answers",
    "outputs",
    "done",
)


class _Suspend(BaseException):
    """Unwinds the function at the end of a superstep (a BaseException so ``except
    Exception`` in user code cannot swallow it)."""


@register_state_type(type_id="checkflow.FunctionalContinue")
@dataclass(frozen=True, slots=True)
class _Continue:
    """The message a functional executor sends itself to replay in the next superstep."""


class _Replay:
    """One replay of the function within one superstep."""

    def __init__(self, ctx: WorkflowContext[Any, Any], state: Any, may_start_step: bool) -> None:
        self.ctx = ctx
        self.state = state
        self.may_start_step = may_start_step
        self.blocked = False
        self.calls: dict[str, int] = {}
        self.outputs = 0
        self.claimed: tuple[str, asyncio.Task[Any]] | None = None

    def key(self, name: str) -> str:
        index = self.calls.get(name, 0)
        self.calls[name] = index + 1
        return f"{name}#{index}"


_current: contextvars.ContextVar[_Replay | None] = contextvars.ContextVar(
    "checkflow_functional_replay", default=None
)


class FunctionalContext:
    """What a ``@workflow`` function may ask of its run besides awaiting steps."""

    __slots__ = ("_declared", "_replay")

    def __init__(self, replay: _Replay, declared: Sequence[Any]) -> None:
        self._replay = replay
        self._declared = declared

    async def request_info(
        self, data: Any, *, response_type: Any, request_id: str | None = None
    ) -> Any:
        """Ask outside for input; the run pauses and ``run(responses=...)`` supplies it.

        ``response_type`` must be a builtin, one of the workflow's ``response_types`` or a
        registered state type.
        Requests are asked one at a time, in the order the function reaches them.
        """
        replay = self._replay
        key = replay.key("request_info")
        answers = replay.state.setdefault(_ANSWERS, {})
        if key in answers:
            return answers[key]
        asked = replay.state.setdefault(_ASKED, {})
        if key not in asked and replay.claimed is None:
            if (
                builtin_type(type_name(response_type)) is None
                and not any(response_type == t for t in (typing.Any, *self._declared))
                and not (isinstance(response_type, type) and is_registered(response_type))
            ):
                raise TypeError(
                    f"response_type {type_name(response_type)} must be a builtin, be "
                    "declared in @workflow(response_types=[...]) or be registered with "
                    "checkflow.state.register_state_type"
                )
            asked[key] = await replay.ctx.request_info(
                data, response_type=response_type, request_id=request_id
            )
        raise _Suspend

    async def yield_output(self, value: Any) -> None:
        """Yield a workflow output (once, however often the function is replayed)."""
        replay = self._replay
        index = replay.outputs
        replay.outputs += 1
        if index >= replay.state.get(_OUTPUTS, 0):
            await replay.ctx.yield_output(value)
            replay.state[_OUTPUTS] = index + 1


class FunctionalExecutor(Executor):
    """The single executor of a functional workflow: replays ``fn`` every superstep."""

    def __init__(
        self, fn: Callable[..., Awaitable[Any]], *, id: str, response_types: Sequence[Any] = ()
    ) -> None:
        super().__init__(id)
        params = list(inspect.signature(fn).parameters.values())
        if not inspect.iscoroutinefunction(fn) or len(params) not in (1, 2):
            raise TypeError(
                "@workflow needs an async def taking (message) or (message, ctx), "
                f"not {callable_name(fn)}"
            )
        hints = typing.get_type_hints(fn)
        self._fn = fn
        self._takes_ctx = len(params) == 2
        self._input_type = hints.get(params[0].name, Any)
        self._declared = tuple(response_types)
        self._answer_type: Any = typing.Union[(Any, *self._declared)] if self._declared else Any

    def signature_extra(self) -> dict[str, Any]:
        return {"function": callable_name(self._fn)}

    def _handler_functions(self) -> HandlerFunctions:
        async def begin(message: Any, ctx: WorkflowContext[Any, Any]) -> None:
            state = ctx.executor_state
            state.clear()
            state[_INPUT] = message
            await self._advance(ctx)

        async def resume(message: Any, ctx: WorkflowContext[Any, Any]) -> None:
            await self._advance(ctx)

        async def answer(request: Any, answer: Any, ctx: WorkflowContext[Any, Any]) -> None:
            asked: dict[str, str] = ctx.executor_state.get(_ASKED, {})
            key = next((k for k, rid in asked.items() if rid == ctx.request_id), None)
            if key is None:  # asked by an invocation a newer message has replaced
                return
            del asked[key]
            ctx.executor_state.setdefault(_ANSWERS, {})[key] = answer
            await self._advance(ctx)

        return [
            ("message", "begin", handler_function(begin, message=self._input_type)),
            ("message", "resume", handler_function(resume, message=_Continue)),
            ("response", "answer", handler_function(answer, request=Any, answer=self._answer_type)),
        ]

    async def _advance(self, ctx: WorkflowContext[Any, Any]) -> None:
        """Run at most one new step, then replay on to the next boundary.

        The second replay may not start a step: it finishes the function, parks a request, or
        finds the next step and asks for another superstep. So each superstep (and snapshot)
        holds exactly one step, and a function's tail after its last step costs no superstep.
        """
        state = ctx.executor_state
        if state.get(_DONE):
            return
        outcome = await self._replay(ctx, may_start_step=True)
        if outcome == "step":
            outcome = await self._replay(ctx, may_start_step=False)
        if outcome == "blocked":
            await ctx.send_message(_Continue())

    async def _replay(self, ctx: WorkflowContext[Any, Any], *, may_start_step: bool) -> str:
        """One replay: ``step`` (ran and recorded one), ``blocked`` (a new step waits),
        ``waiting`` (for an answer) or ``done``."""
        state = ctx.executor_state
        replay = _Replay(ctx, state, may_start_step)
        args: tuple[Any, ...] = (state[_INPUT],)
        if self._takes_ctx:
            args += (FunctionalContext(replay, self._declared),)
        token = _current.set(replay)
        try:
            result = await self._fn(*args)
        except _Suspend:
            pass
        except BaseException:
            if replay.claimed is not None:
                replay.claimed[1].cancel()
            raise
        else:
            state[_DONE] = True
            if result is not None:
                await ctx.yield_output(result)
            return "done"
        finally:
            _current.reset(token)
        if replay.claimed is not None:
            key, task = replay.claimed
            state.setdefault(_STEPS, {})[key] = await task
            return "step"
        return "blocked" if replay.blocked else "waiting"


async def _run_step(
    name: str, fn: Callable[..., Coroutine[Any, Any, Any]], args: Any, kwargs: Any
) -> Any:
    replay = _current.get()
    if replay is None:  # called outside a functional workflow: just a function
        return await fn(*args, **kwargs)
    key = replay.key(name)
    steps = replay.state.get(_STEPS, {})
    if key in steps:
        return steps[key]
    if replay.claimed is not None or not replay.may_start_step:  # one new step per superstep
        replay.blocked = True
        raise _Suspend
    isolated = contextvars.copy_context()
    isolated.run(_current.set, None)  # steps called inside a step simply run
    task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(
        fn(*args, **kwargs), context=isolated
    )
    replay.claimed = (key, task)
    await task
    raise _Suspend


@overload
def step(fn: Callable[P, Awaitable[R]], /) -> Callable[P, Coroutine[Any, Any, R]]: ...
@overload
def step(
    *, name: str | None = None
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Coroutine[Any, Any, R]]]: ...
def step(fn: Any = None, /, *, name: str | None = None) -> Any:
    """Make an async function a recorded step of the functional workflow that awaits it.

    Inside a run, a step is identified by ``name`` (default: the function's name) and how
    often it was called before; a completed step is never run again for that run, its recorded
    result is returned instead (so results must be encodable by the state codec). Outside a
    run it is the plain function.
    """

    def wrap(f: Callable[..., Coroutine[Any, Any, Any]]) -> Any:
        step_name = name or f.__name__

        @functools.wraps(f)
        async def run_step(*args: Any, **kwargs: Any) -> Any:
            return await _run_step(step_name, f, args, kwargs)

        return run_step

    return wrap(fn) if fn is not None else wrap


@overload
def workflow(fn: Callable[..., Awaitable[Any]], /) -> Workflow: ...
@overload
def workflow(
    *, name: str | None = None, max_iterations: int = 1000, response_types: Sequence[Any] = ()
) -> Callable[[Callable[..., Awaitable[Any]]], Workflow]: ...
def workflow(
    fn: Callable[..., Awaitable[Any]] | None = None,
    /,
    *,
    name: str | None = None,
    max_iterations: int = 1000,
    response_types: Sequence[Any] = (),
) -> Workflow | Callable[[Callable[..., Awaitable[Any]]], Workflow]:
    """Turn ``async def f(message)`` or ``async def f(message, ctx)`` into a ``Workflow``.

    The result is an ordinary ``Workflow`` (``run``, ``create_checkpoint``, ``as_agent``,
    nesting) whose supersteps are the function's steps; a non-``None`` return value is
    yielded as an output. ``response_types`` names the non-builtin types ``ctx.request_info``
    answers may have, so pending requests can be restored (registered state types need no
    declaration). ``max_iterations`` bounds the steps of one ``run()`` call.

    The graph signature covers the function's qualified name, input type and declared
    response types, not its body (code has no stable, process-independent hash): an edited
    body still resumes old checkpoints, replaying recorded steps by name and call index, so
    renaming or reordering steps of a paused run is the caller's responsibility.
    """

    def build(f: Callable[..., Awaitable[Any]]) -> Workflow:
        executor_id = name or f.__name__
        node = FunctionalExecutor(f, id=executor_id, response_types=response_types)
        builder = WorkflowBuilder(node, name=executor_id, max_iterations=max_iterations)
        return builder.add_edge(node, node).build()

    return build(fn) if fn is not None else build
