"""The checkflow command: serve a workflow, inspect checkpoints and conversations in a storage.

``python -m checkflow serve MODULE:ATTR ...`` runs the hosting app with uvicorn;
``python -m checkflow checkpoints ...`` is ``_checkpoints``, ``conversations ...`` is
``_conversations`` and ``migrate-v1`` is ``_migrate``. This module builds the parser, runs the
command, and turns the errors a user can act on into one line and exit status 2 (an unknown
flag is named by the subcommand it was given to); output cut short by a closed pipe
(``| head``) ends quietly, as other commands do. It must never write to a storage.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pkgutil
import signal
import sys
from collections.abc import Sequence

import checkflow.adapters
from checkflow._extras import requires_extra
from checkflow._version import __version__
from checkflow.cli._checkpoints import add_checkpoint_commands, run_checkpoints
from checkflow.cli._conversations import add_conversation_commands, run_conversations
from checkflow.cli._inspector import add_inspect_command
from checkflow.cli._migrate import COMMAND as MIGRATE
from checkflow.cli._migrate import add_migrate_parser, run_migrate
from checkflow.cli._serve_options import ENVIRONMENT, add_serve_options, serve_options
from checkflow.cli._storage_url import (
    COSMOS_SETTINGS,
    DEFAULT_STORAGE,
    SCHEMES,
    open_storage,
)
from checkflow.errors import CheckflowError

__all__ = ["main"]

_CUT_SHORT = 128 + getattr(signal, "SIGPIPE", 13)
"""The status a shell reports for a command its reader stopped reading (141, SIGPIPE's)."""


def _epilog() -> str:
    lines = ["environment (a flag wins over its variable):"]
    lines += [f"  {k:38}{v}" for k, v in ENVIRONMENT.items()]
    lines.append("--storage cosmos: reads")
    lines += [f"  {k:38}{v}" for k, v in COSMOS_SETTINGS.items()]
    return "\n".join(lines)


def _adapter_names() -> list[str]:
    """The adapters ``--adapters`` can name: the subpackages of ``checkflow.adapters`` (listed,
    not imported: an adapter's extra may be missing)."""
    return sorted(m.name for m in pkgutil.iter_modules(checkflow.adapters.__path__))


def _parser() -> argparse.ArgumentParser:
    default_storage = os.environ.get("CHECKFLOW_STORAGE") or DEFAULT_STORAGE
    storage_help = (f"{SCHEMES} (default {default_storage}; the cosmos: settings are listed "
                    "by checkflow --help)")
    parser = argparse.ArgumentParser(
        prog="checkflow", description=__doc__.splitlines()[0], epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"checkflow {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_storage(action: argparse.ArgumentParser) -> None:
        action.add_argument("--storage", default=default_storage, metavar="URL",
                            help=storage_help)
        action.add_argument("--json", action="store_true", help="print JSON for scripts")

    serve = commands.add_parser("serve", help="serve a workflow (or agent) over HTTP",
                                description="serve a workflow (or agent) over HTTP")
    serve.add_argument("target", metavar="MODULE:ATTR",
                       help="a Workflow, WorkflowBuilder, factory of one, or an Agent")
    serve.add_argument("--host", default=None,
                       help="default 127.0.0.1 (all interfaces, 0.0.0.0, with --foundry)")
    serve.add_argument("--port", type=int, default=None,
                       help="0 picks a free port (default 8000; $PORT or 8088 with --foundry)")
    serve.add_argument("--foundry", action="store_true",
                       help="the Foundry hosted-agent container contract: the Responses "
                            "routes and /readiness, x-agent-user-id as the principal when "
                            "there is no --authenticate, x-agent-session-id as the "
                            "conversation of a new response")
    serve.add_argument("--storage", default=default_storage, metavar="URL", help=storage_help)
    names = _adapter_names()
    serve.add_argument("--adapters", default=None, metavar="NAME,...",
                       help="comma-separated, what is mounted (the health probes always): native "
                            "(the native API /v1 and /openapi.json), "
                            f"{', '.join(names)} (each needs the extra of its name: pip "
                            "install 'checkflow[NAME]'), or MODULE:ATTR naming an adapter "
                            "or a factory of one (default native)")
    serve.add_argument("--authenticate", metavar="MODULE:FUNC",
                       help="authenticate(request) -> principal | None")
    add_serve_options(serve)
    add_inspect_command(commands, default_storage, storage_help)
    add_checkpoint_commands(commands, add_storage)
    add_conversation_commands(commands, add_storage)
    add_migrate_parser(commands)
    for _path, leaf in leaf_parsers(parser):
        leaf.set_defaults(command_parser=leaf)
    return parser


def leaf_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
                 ) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command that runs (``("checkpoints", "ls")``, ...) with its parser."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += leaf_parsers(sub, (*path, name))
    return found or [(path, parser)]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments; an unknown one is refused by the subcommand it was given to, so the
    message names it (``checkflow checkpoints ls: error: unrecognized arguments: --foo``)."""
    args, unknown = _parser().parse_known_args(argv)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _run(args: argparse.Namespace) -> int:
    if args.command == "serve":
        options = serve_options(args)
        with requires_extra("hosting", "serve"):
            from checkflow.cli._serve import run_serve  # needs uvicorn: only serve pays
        run_serve(args.target, options)
        return 0
    if args.command == "inspect":
        with requires_extra("hosting", "inspect"):
            from checkflow.cli._inspector import run_inspect  # needs uvicorn, as serve
        return run_inspect(args)
    if args.command == MIGRATE:
        return asyncio.run(run_migrate(args))
    return asyncio.run(_inspect(args))


async def _inspect(args: argparse.Namespace) -> int:
    async with open_storage(args.storage, must_exist=True) as stores:
        if args.command == "conversations":
            return await run_conversations(args, stores)
        return await run_checkpoints(args, stores)


def _quiet_stdout() -> None:
    """Point stdout at the null device: what is still buffered for the reader that left is
    dropped at exit instead of failing again (the Python documentation's recipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (captured): nothing to do
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m checkflow`` and the ``checkflow`` script."""
    try:
        try:
            args = _parse(argv)
            return _run(args)
        except (CheckflowError, ValueError, ImportError) as exc:
            print(f"checkflow: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return 130
        finally:
            sys.stdout.flush()  # a closed pipe shows here at the latest, not at exit
    except BrokenPipeError:
        _quiet_stdout()
        return _CUT_SHORT
