"""Functional workflows for the functional-workflow tests, and the entry point the kill test
runs in a fresh interpreter (``main(["run", <checkpoint root>, <work dir>])``)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import step, workflow


def record(job: dict[str, str], line: str) -> None:
    """Append ``line`` to the job's log: the side effect that shows which steps ran."""
    with open(Path(job["dir"]) / "log", "a") as log:
        log.write(line + "\n")


def log_lines(work_dir: Path) -> list[str]:
    path = work_dir / "log"
    return path.read_text().splitlines() if path.exists() else []


@step
async def fetch(job: dict[str, str]) -> str:
    record(job, "fetch")
    return "owls"


@step
async def transform(job: dict[str, str], data: str) -> str:
    """The first time, writes a marker and blocks forever (the kill test kills it there)."""
    record(job, "transform")
    marker = Path(job["dir"]) / "transform.started"
    if not marker.exists():
        marker.write_text("started")
        await asyncio.Event().wait()
    return data.upper()


@step
async def store(job: dict[str, str], data: str) -> str:
    record(job, "store")
    return f"stored {data}"


@workflow(name="etl")
async def etl(job: dict[str, str]) -> str:
    data = await fetch(job)
    shaped = await transform(job, data)
    return await store(job, shaped)


async def _run(root: str, work_dir: str) -> None:
    storage = FileCheckpointStorage(root)
    checkpoint = etl.create_checkpoint(checkpoint_id="etl-1", checkpoint_storage=storage)
    await etl.run({"dir": work_dir}, checkpoint=checkpoint)


def main(argv: list[str]) -> None:
    command, *args = argv
    if command != "run":
        raise SystemExit(f"unknown command {command!r}")
    asyncio.run(_run(*args))
    sys.stdout.write("finished\n")
