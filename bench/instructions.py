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

    .venv/bin/python bench/instructions.py [--before DIR] [--storage memory file]
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
_COLLECTED = re.compile(r"Collected\s*:\s*([\d,]+)")


def instructions(tree: Path, storage: str, conversations: int) -> int:
    """User-space instructions of one run of ``conversations`` (after the warm-up)."""
    env = {**os.environ, "PYTHONHASHSEED": "0",
           "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT / "tests" / "e2e")])}
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
            str(ROOT / "bench" / "_hosted_turns.py"), storage, str(conversations)]
    done = subprocess.run(argv, env=env, cwd=tree, capture_output=True, text=True,
                          timeout=1800, check=False)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"the run under callgrind failed ({done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_conversation(tree: Path, storage: str, fewer: int, more: int) -> float:
    return (instructions(tree, storage, more) - instructions(tree, storage, fewer)) / (
        more - fewer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a source tree to compare (old code)")
    parser.add_argument("--storage", nargs="+", choices=("memory", "file"),
                        default=["memory", "file"])
    parser.add_argument("--fewer", type=int, default=40)
    parser.add_argument("--more", type=int, default=240)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    if args.more <= args.fewer:
        raise SystemExit("--more must be larger than --fewer")
    trees = [("now", ROOT)] if args.before is None else [("before", args.before.resolve()),
                                                          ("after", ROOT)]
    print(f"user-space instructions per hosted conversation (callgrind; {args.more} minus "
          f"{args.fewer} conversations)")
    for storage in args.storage:
        counts = {}
        for name, tree in trees:
            counts[name] = per_conversation(tree, storage, args.fewer, args.more)
            print(f"{storage + ':':8} {name:7} {counts[name]:>12,.0f}", flush=True)
        if "before" in counts:
            change = counts["after"] / counts["before"] - 1
            print(f"{storage + ':':8} after/before {change:+.1%}")


if __name__ == "__main__":
    main()
