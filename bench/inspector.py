"""The inspector's first view of a large conversation, in the distribution's Chromium.

Builds a conversation of ``--snapshots`` snapshots (default 1,000: a workflow that loops one
executor, branched every ``--branch-every`` snapshots so the tree has lanes) on a ``file:``
storage in a temporary folder, serves it with ``checkflow inspect --storage`` on loopback,
and opens ``/inspector/#/c/<id>`` in headless Chromium (Playwright, the system browser; no
download). Per round it prints the time from navigation to the page's ``data-ready`` mark (the
tree, the graph and the head's detail drawn), the server time of the conversation read, and
the size of what was read; then the median. The issue's target is under a second for 1,000
snapshots; this prints the figure beside it and asserts nothing.

    .venv/bin/python bench/inspector.py [--snapshots 1000] [--rounds 5] [--chromium PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checkflow.hosting import WorkflowHost  # noqa: E402
from checkflow.sessions import FileSessionStore  # noqa: E402
from checkflow.storage import FileCheckpointStorage  # noqa: E402
from checkflow.workflows import (  # noqa: E402
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


class Loop(Executor):
    """Counts down from the number it is sent, one superstep (one snapshot) per step."""

    @handler
    async def step(self, left: int, ctx: WorkflowContext) -> None:
        ctx.executor_state["left"] = left
        ctx.executor_state.setdefault("notes", []).append(f"step {left}")
        if left > 0:
            await ctx.send_message(left - 1)
        else:
            await ctx.yield_output("done")


def _workflow(steps: int) -> Workflow:
    loop = Loop("loop")
    return WorkflowBuilder(start_executor=loop, name="long", max_iterations=steps + 10
                           ).add_edge(loop, loop).build()


async def _build(folder: Path, snapshots: int, branch_every: int) -> str:
    """A conversation of about ``snapshots`` snapshots: turns of ``branch_every`` steps on
    one line, then a branch from the end of every other turn (where nothing is pending)."""
    host = WorkflowHost(_workflow(snapshots), session_store=FileSessionStore(folder / "sessions"),
                        checkpoint_storage=FileCheckpointStorage(folder / "checkpoints"))
    per_turn = branch_every + 2  # the input's snapshot, then one per step (and the last)
    ends, made = [], 0
    while made + per_turn <= snapshots * 3 // 4:
        result = await host.run("long", message=branch_every)
        assert result.resume_token is not None
        ends.append(result.resume_token.snapshot_id)
        made += per_turn
    for end in ends[:-1:2]:
        steps = min(branch_every // 2, snapshots - made - 2)
        if steps < 1:
            break
        await host.run("long", message=steps, from_snapshot=end)
        made += steps + 2
    while made < snapshots:  # the rest on the last branch's line, which is now the head's
        steps = min(branch_every, snapshots - made - 2)
        if steps < 1:
            break
        await host.run("long", message=steps)
        made += steps + 2
    checkpoint, _ = await host.get_checkpoint("long")
    return str(len(checkpoint.snapshots))


def _wait_ready(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the inspector at {url} did not answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=1000)
    parser.add_argument("--branch-every", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--port", type=int, default=8977)
    parser.add_argument("--chromium", default=os.environ.get("CHECKFLOW_CHROMIUM",
                                                             "/usr/bin/chromium"))
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise SystemExit("bench/inspector.py needs playwright (the dev extra)") from None
    if not Path(args.chromium).exists():
        raise SystemExit(f"no Chromium at {args.chromium} (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        count = asyncio.run(_build(folder, args.snapshots, args.branch_every))
        storage = f"file:{folder}"
        server = subprocess.Popen(
            [sys.executable, "-m", "checkflow", "inspect", "--storage", storage,
             "--port", str(args.port)], cwd=ROOT, stdout=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{args.port}"
        try:
            _wait_ready(f"{base}/healthz", time.monotonic() + 30)
            started = time.perf_counter()
            with urllib.request.urlopen(f"{base}/inspector/api/conversations/long") as answer:
                size = len(answer.read())
            read_ms = (time.perf_counter() - started) * 1000
            print(f"conversation 'long': {count} snapshots, its read {size / 1024:.0f} KiB "
                  f"in {read_ms:.0f} ms (server, first read)")
            figures = _rounds(sync_playwright, args, f"{base}/inspector/#/c/long")
        finally:
            server.terminate()
            server.wait(10)
    median = statistics.median(figures)
    print(f"first view, median of {len(figures)}: {median:.0f} ms "
          f"(target: under 1000 ms for 1,000 snapshots; {median / 1000:.2f}x of it)")


def _rounds(sync_playwright: object, args: argparse.Namespace, url: str) -> list[float]:
    figures = []
    with sync_playwright() as p:  # type: ignore[operator]
        browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        try:
            for round_number in range(1, args.rounds + 1):
                page = browser.new_page()  # a fresh page each round: nothing cached in it
                page.goto(url, wait_until="commit")
                page.wait_for_selector('body[data-ready="conversation"]', timeout=60_000)
                ms = page.evaluate("performance.now()")
                nodes = page.locator('[data-testid="snapshot-node"]').count()
                print(f"  round {round_number}: ready after {ms:.0f} ms, "
                      f"{nodes} snapshot nodes drawn")
                figures.append(float(ms))
                page.close()
        finally:
            browser.close()
    return figures


if __name__ == "__main__":
    main()
