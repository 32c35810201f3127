"""A functional workflow: plain async code with ``@workflow`` and ``@step``.

Shows: each ``@step`` result is recorded in the checkpoint, one step per superstep, so a
resumed run replays recorded results instead of running steps again; ``ctx.request_info``
pauses the function for a human like any workflow.

Run it: ``python samples/functional.py`` (it writes ``./checkpoints``). Each run starts a new
checkpoint (its id generated), so it can be run again and again in one folder.
"""

from __future__ import annotations

import asyncio

from checkflow import FileCheckpointStorage, FunctionalContext, step, workflow

CALLS: list[str] = []  # which steps really ran (to show that a resume replays them)


@step
async def fetch(city: str) -> dict[str, int]:
    CALLS.append("fetch")
    return {"temperature": 21 if city == "Lisbon" else 9}


@step
async def advise(weather: dict[str, int]) -> str:
    CALLS.append("advise")
    return "t-shirt" if weather["temperature"] > 15 else "coat"


@workflow(name="packing")
async def packing(city: str, ctx: FunctionalContext) -> str:
    weather = await fetch(city)
    item = await advise(weather)
    ok = await ctx.request_info({"pack": item}, response_type=bool)
    return f"packed a {item}" if ok else "packed nothing"


async def main(root: str = "./checkpoints") -> str:
    storage = FileCheckpointStorage(root)
    checkpoint = packing.create_checkpoint(checkpoint_storage=storage)  # a new id each run
    paused = await packing.run("Lisbon", checkpoint=checkpoint)
    (request_id,) = paused.pending_requests
    print("paused after", CALLS)
    done = await packing.run(responses={request_id: True},
                             checkpoint=await storage.load(checkpoint.checkpoint_id))
    print("outputs:", done.get_outputs(), "steps run:", CALLS)
    return str(done.get_outputs()[0])


if __name__ == "__main__":
    asyncio.run(main())
