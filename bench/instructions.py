"""Instructions per hosted conversation, counted by callgrind: the CPU a change costs or saves,
repeatable whatever else the machine is doing.

Served CPU time on a shared virtual machine moves by 15-20% from one phase to the next, so a
change worth 2% needs many interleaved rounds of ``bench/hosting.py`` to show. Instruction
counts repeat to a fraction of a percent. This runs ``bench/_hosted_turns.py`` (conversations
through ``WorkflowHost`` in process: a message that pauses for approval, then the answer)
under ``valgrind --tool=callgrind`` twice, with ``--fewer`` and ``--more`` conversations, and
prints the difference per conversation, for ``memory:`` and ``file:``, for this tree and for
``--before DIR`` (a ``git worktree`` of the base commit), with the ratio.

What it leaves out: the HTTP stack (the same for every tree), kernel work (syncs, file system
calls; ``file:`` counts its user-space side only) and cache effects, which a served process
adds on top. Decide with it, then confirm with ``bench/hosting.py``. Needs valgrind; about a
minute per row. Asserts nothing.

``--protocols native agui a2a responses`` counts instead the same conversation over each
protocol through the ASGI app ``serve`` builds with its adapters (``bench/_asgi_turns.py``:
one direct ASGI call per request, no socket, no HTTP parsing; native goes through the app
too, so the ratios compare like with like), and prints each protocol's count beside the
native one with the ratio (issue 27's target: within 1.25x), with ``--fewer 10 --more 40``
unless given.

    .venv/bin/python bench/instructions.py [--before DIR] [--storage memory file]
        [--protocols native agui a2a responses]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTOCOLS = ("native", "agui", "a2a", "responses")
PROTOCOL_TARGET = 1.25
_COLLECTED = re.compile(r"Collected\s*:\s*([\d,]+)")


def instructions(tree: Path, storage: str, conversations: int, protocol: str | None = None
                 ) -> int:
    """User-space instructions of one run of ``conversations`` (after the warm-up), through
    ``WorkflowHost`` or, with ``protocol``, through the app over that protocol."""
    env = {**os.environ, "PYTHONHASHSEED": "0",
           "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT / "tests" / "e2e")])}
    script = [str(ROOT / "bench" / "_hosted_turns.py"), storage] if protocol is None else [
        str(ROOT / "bench" / "_asgi_turns.py"), storage, protocol]
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
            *script, str(conversations)]
    done = subprocess.run(argv, env=env, cwd=tree, capture_output=True, text=True,
                          timeout=1800, check=False)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"the run under callgrind failed ({done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_conversation(tree: Path, storage: str, fewer: int, more: int,
                     protocol: str | None = None) -> float:
    return (instructions(tree, storage, more, protocol)
            - instructions(tree, storage, fewer, protocol)) / (more - fewer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a source tree to compare (old code)")
    parser.add_argument("--storage", nargs="+", choices=("memory", "file"),
                        default=["memory", "file"])
    parser.add_argument("--fewer", type=int, default=None, help="default 40 (10 with --protocols)")
    parser.add_argument("--more", type=int, default=None, help="default 240 (40 with --protocols)")
    parser.add_argument("--protocols", nargs="+", choices=PROTOCOLS,
                        help="count these protocols' conversations through the app instead")
    args = parser.parse_args()
    args.fewer = args.fewer if args.fewer is not None else 10 if args.protocols else 40
    args.more = args.more if args.more is not None else 40 if args.protocols else 240
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    if args.more <= args.fewer:
        raise SystemExit("--more must be larger than --fewer")
    trees = [("now", ROOT)] if args.before is None else [("before", args.before.resolve()),
                                                          ("after", ROOT)]
    print(f"user-space instructions per hosted conversation (callgrind; {args.more} minus "
          f"{args.fewer} conversations)")
    if args.protocols:
        _count_protocols(trees, args.storage, args.protocols, args.fewer, args.more)
        return
    for storage in args.storage:
        counts = {}
        for name, tree in trees:
            counts[name] = per_conversation(tree, storage, args.fewer, args.more)
            print(f"{storage + ':':8} {name:7} {counts[name]:>12,.0f}", flush=True)
        if "before" in counts:
            change = counts["after"] / counts["before"] - 1
            print(f"{storage + ':':8} after/before {change:+.1%}")


def _count_protocols(trees: list[tuple[str, Path]], storages: list[str], protocols: list[str],
                     fewer: int, more: int) -> None:
    """Each protocol's count through the app, and its ratio to native's in the same tree."""
    for storage in storages:
        counts: dict[tuple[str, str], float] = {}
        for name, tree in trees:
            for protocol in protocols:
                counts[(name, protocol)] = count = per_conversation(tree, storage, fewer, more,
                                                                    protocol)
                native = counts.get((name, "native"))
                versus = (f"  {count / native:5.2f}x native (target <= {PROTOCOL_TARGET}x)"
                          if native and protocol != "native" else "")
                before = counts.get(("before", protocol))
                change = f"  after/before {count / before - 1:+.1%}" if (
                    name == "after" and before) else ""
                print(f"{storage + ':':8} {name:7} {protocol:10} {count:>12,.0f}{versus}{change}",
                      flush=True)


if __name__ == "__main__":
    main()
