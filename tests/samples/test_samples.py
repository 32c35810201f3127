"""Every sample runs as its docstring says and shows what it claims to."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checkflow import Checkpoint, FileCheckpointStorage
from checkflow.workflows import RunStatus

ROOT = Path(__file__).resolve().parent.parent.parent
Run = Callable[..., Any]  # the run_sample fixture: conftest.SampleRuns


def test_every_sample_says_what_it_shows_and_how_to_run_it() -> None:
    for path in sorted((ROOT / "samples").glob("*.py")):
        doc = path.read_text().split('"""')[1]
        assert "Run it" in doc or "make serve" in doc, path.name


def test_every_sample_says_what_running_it_again_does() -> None:
    for path in sorted((ROOT / "samples").glob("*.py")):
        doc = " ".join(path.read_text().split('"""')[1].split())
        assert re.search(r"afresh|continues|starts a new (checkpoint|conversation)", doc), \
            path.name


def stored(root: Path) -> list[Checkpoint]:
    """Every checkpoint a file storage at ``root`` holds, loaded."""
    async def load() -> list[Checkpoint]:
        storage = FileCheckpointStorage(root)
        return [await storage.load(i) for i in await storage.list_checkpoint_ids()]
    return asyncio.run(load())


def test_factor_starts_a_new_checkpoint_each_run(run_sample: Run, tmp_path: Path) -> None:
    runs = run_sample("factor")
    assert runs.folders == {"checkpoints"}
    for out in (runs.first.splitlines(), runs.second.splitlines()):
        assert out[0].startswith("paused after 6 snapshots, asking ")
        assert out[1:] == ["outputs: ['published']", "branched: 13 snapshots, 2 tips",
                           "100 one-shot runs, one workflow"]
    assert [len(c.snapshots) for c in stored(tmp_path / "checkpoints")] == [13, 13]


def test_time_travel_prints_a_tree_with_two_branches_each_run(
        run_sample: Run, tmp_path: Path) -> None:
    runs = run_sample("time_travel")
    assert runs.folders == {"checkpoints"}
    ids = []
    for out in (runs.first.splitlines(), runs.second.splitlines()):
        assert out[0] == "the branch finished with ['liftoff']"
        tree = out[1:-1]
        assert len(tree) == 8 and tree[-1].endswith("<- head")
        depths = [(len(line) - len(line.lstrip())) // 2 for line in tree]
        assert depths == [0, 1, 2, 3, 4, 2, 3, 4]  # the branch forks after superstep 1
        command = re.fullmatch(r"the same tree: (python -m checkflow checkpoints tree (\w+) "
                               r"--storage file:\.)", out[-1])
        assert command is not None, out[-1]
        ids.append(command[2])
        # the command it names prints the same snapshots from the storage
        shown = subprocess.run([sys.executable, *command[1].split()[1:]], cwd=tmp_path,
                               capture_output=True, text=True, timeout=60, check=True).stdout
        assert re.findall(r"[0-9a-f]{8}-[0-9a-f-]{27}", shown) == \
            [line.split()[0] for line in tree]
    assert ids[0] != ids[1]
    assert sorted(c.checkpoint_id for c in stored(tmp_path / "checkpoints")) == sorted(ids)


def test_concurrent_runs_continue_the_file_checkpoints(run_sample: Run, tmp_path: Path) -> None:
    runs = run_sample("concurrent_runs")
    assert runs.folders == {"checkpoints"}
    for out in (runs.first, runs.second):
        assert out.splitlines() == [
            "200 runs, 200 checkpoints", "20 checkpoints in files",
            "a second run on the same checkpoint was refused"]
    checkpoints = stored(tmp_path / "checkpoints")
    assert sorted(c.checkpoint_id for c in checkpoints) == sorted(f"square-{n}"
                                                                  for n in range(20))
    assert {len(c.snapshots) for c in checkpoints} == {4}  # two snapshots a run, two runs


def test_nested(run_sample: Run) -> None:
    runs = run_sample("nested")
    assert runs.left == frozenset() and runs.second == runs.first
    assert "pending: ['review/approve']" in runs.first
    assert "outputs: ['published: All about owls.']" in runs.first
    assert re.search(r'subgraph review \["review \(review\)"\]', runs.first)


def test_agent_chain_with_scripted_agents(run_sample: Run) -> None:
    runs = run_sample("agent_chain", OPENAI_API_KEY="")
    assert runs.left == frozenset() and runs.second == runs.first
    assert runs.first.splitlines() == [
        "editor turns kept in the snapshot: 4",
        "scripted: ['Owls fly silently at night.', 'Bats sleep upside down.']"]


def test_workflow_agent_continues_from_a_saved_session(run_sample: Run, tmp_path: Path) -> None:
    runs = run_sample("workflow_agent")
    assert runs.folders == {"state"}
    assert any(p.startswith("state/sessions/") for p in runs.left)
    for out in (runs.first, runs.second):
        assert out.splitlines() == [
            "the agent asks: request_info {'confirm': 'a table for two at eight'}",
            "the agent says: booked: a table for two at eight"]
    # the second run went on in the first run's checkpoint: two bookings, one checkpoint
    (checkpoint,) = stored(tmp_path / "state" / "checkpoints")
    assert len(checkpoint.snapshots) == 8


def test_functional_resume_replays_recorded_steps(run_sample: Run, tmp_path: Path) -> None:
    runs = run_sample("functional")
    assert runs.folders == {"checkpoints"}
    for out in (runs.first, runs.second):
        assert out.splitlines() == [
            "paused after ['fetch', 'advise']",
            "outputs: ['packed a t-shirt'] steps run: ['fetch', 'advise']"]
    assert len(stored(tmp_path / "checkpoints")) == 2


def test_orchestrations(run_sample: Run) -> None:
    runs = run_sample("orchestrations")
    assert runs.left == frozenset() and runs.second == runs.first
    out = runs.first.splitlines()
    assert out[:4] == ["user: Tell me about owls.", "assistant: Owls hunt at night.",
                       "assistant: Night hunters: owls.",
                       "optimist: It will be sunny. / pessimist: It will rain."]
    assert out[4] == "flowchart TD"


async def test_approval_publishes_each_queued_draft_with_its_own_text() -> None:
    sys.path.insert(0, str(ROOT))
    try:
        from samples.approval import workflow
    finally:
        sys.path.remove(str(ROOT))
    checkpoint = workflow.create_checkpoint()
    first = await workflow.run("owls", checkpoint=checkpoint)
    second = await workflow.run("bats", checkpoint=checkpoint)
    (owls,) = first.pending_requests
    bats = next(r for r in second.pending_requests if r != owls)

    answered = await workflow.run(responses={bats: True}, checkpoint=checkpoint)
    assert answered.get_outputs() == ["published: Five things to know about bats."]
    done = await workflow.run(responses={owls: True}, checkpoint=checkpoint)
    assert done.get_outputs() == ["published: Five things to know about owls."]
    assert done.status is RunStatus.IDLE


@pytest.mark.usefixtures("cosmos_emulator")
def test_cosmos_hosting_against_the_emulator(run_sample: Run, cosmos_emulator) -> None:
    runs = run_sample("cosmos_hosting", CHECKFLOW_COSMOS_ENDPOINT=cosmos_emulator.endpoint,
                      CHECKFLOW_COSMOS_KEY=cosmos_emulator.key,
                      CHECKFLOW_COSMOS_VERIFY_TLS="0")
    conversations = []
    for out in (runs.first.splitlines(), runs.second.splitlines()):
        started = re.fullmatch(r"(article-\w+): awaiting_responses, asking \w+", out[0])
        assert started is not None, out[0]
        assert out[1] == (f"{started[1]}: idle, outputs "
                          "['published: Five things to know about owls.']")
        conversations.append(started[1])
    assert conversations[0] != conversations[1]  # a new conversation in the same containers


async def test_agent_chain_with_openai_agents_when_a_key_is_set(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import httpx
    import respx

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://llm.test/v1")
    sys.path.insert(0, str(ROOT))
    try:
        from samples.agent_chain import main
    finally:
        sys.path.remove(str(ROOT))
    replies = iter(["Owls hunt.", "Owls hunt silently.", "Bats fly.", "Bats fly blind."])

    def reply(request: httpx.Request) -> httpx.Response:
        message = {"role": "assistant", "content": next(replies)}
        return httpx.Response(200, json={"id": "c", "object": "chat.completion",
                                         "choices": [{"index": 0, "message": message}]})

    # the model service is the one thing a test cannot run: respx stands in for it
    with respx.mock(base_url="https://llm.test/v1") as mock:
        route = mock.post("/chat/completions").mock(side_effect=reply)
        await main()
    assert route.call_count == 4
    assert "openai: ['Owls hunt silently.', 'Bats fly blind.']" in capsys.readouterr().out


def test_what_samples_and_serve_write_is_ignored_and_the_packages_are_not(
        git_ignores: Callable[[str], bool | None]) -> None:
    if git_ignores("checkpoints/x") is None:
        pytest.skip("not a git checkout")
    # hosted.py and serve (file:./.checkflow, its default) write .checkflow; run from samples/
    for written in ("checkpoints", "state", ".checkflow", "samples/checkpoints",
                    "samples/state"):
        assert git_ignores(f"{written}/x"), written
    for source in ("checkflow/checkpoints/x.py", "tests/checkpoints/x.py", "samples/x.py"):
        assert git_ignores(source) is False, source


def test_the_support_sample_asks_before_each_refund(run_sample: Run) -> None:
    runs = run_sample("support", OPENAI_API_KEY="", CHECKFLOW_SUPPORT_LEDGER="")
    assert runs.left == frozenset() and runs.second == runs.first
    assert runs.first.splitlines() == [
        "asks to refund {\"amount\": 40.0, \"order_id\": \"1001\"}: {'approved': True}",
        "says: Refunded 40.00 on order 1001.",
        "asks to refund {\"amount\": 25.5, \"order_id\": \"1002\"}: "
        "{'approved': False, 'reason': 'bought in a sale'}",
        "says: I did not refund it. (The user denied this call: bought in a sale. "
        "It did not run.)"]


async def test_the_support_sample_runs_its_tools_with_openai_when_a_key_is_set(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib

    import respx

    from tests.llm_script import BASE_URL, Model, call, reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", BASE_URL)
    monkeypatch.delenv("CHECKFLOW_SUPPORT_LEDGER", raising=False)
    sys.path.insert(0, str(ROOT))
    try:
        support = importlib.reload(importlib.import_module("samples.support"))
    finally:
        sys.path.remove(str(ROOT))
    model = Model([
        reply(None, call("a", "lookup_order", order_id="1001")),
        reply(None, call("b", "refund", order_id="1001", amount=40)), reply("Refunded 40."),
        reply(None, call("c", "refund", order_id="1002", amount=25.5)), reply("Not refunded.")])
    # the model service is the one thing a test cannot run: respx stands in for it
    with respx.mock(base_url=BASE_URL) as mock:
        mock.post("/chat/completions").mock(side_effect=model)
        await support.main()
    sys.modules.pop("samples.support")  # built with the key: later imports start afresh
    assert type(support.workflow.plan.start.executor.agent).__name__ == "OpenAIChatAgent"
    assert model.tool_names(0) == ["lookup_order", "refund"]
    assert model.requests[0]["messages"][0]["role"] == "system"
    assert "says: Refunded 40." in capsys.readouterr().out
