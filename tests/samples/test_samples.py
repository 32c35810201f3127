"""Every sample runs as its docstring says and shows what it claims to."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from checkflow.workflows import RunStatus

ROOT = Path(__file__).resolve().parent.parent.parent
Run = Callable[..., str]


def test_every_sample_says_what_it_shows_and_how_to_run_it() -> None:
    for path in sorted((ROOT / "samples").glob("*.py")):
        doc = path.read_text().split('"""')[1]
        assert "Run it" in doc or "make serve" in doc, path.name


def test_factor(run_sample: Run, tmp_path: Path) -> None:
    out = run_sample("factor").splitlines()
    assert out[0].startswith("paused after 6 snapshots, asking ")
    assert out[1:] == ["outputs: ['published']", "branched: 13 snapshots, 2 tips",
                       "100 one-shot runs, one workflow"]
    assert (tmp_path / "checkpoints").is_dir()


def test_time_travel_prints_a_tree_with_two_branches(run_sample: Run) -> None:
    out = run_sample("time_travel").splitlines()
    assert out[0] == "the branch finished with ['liftoff']"
    tree = out[1:]
    assert len(tree) == 8 and tree[-1].endswith("<- head")
    depths = [(len(line) - len(line.lstrip())) // 2 for line in tree]
    assert depths == [0, 1, 2, 3, 4, 2, 3, 4]  # the branch forks after superstep 1


def test_concurrent_runs(run_sample: Run) -> None:
    assert run_sample("concurrent_runs").splitlines() == [
        "200 runs, 200 checkpoints", "20 checkpoints in files",
        "a second run on the same checkpoint was refused"]


def test_nested(run_sample: Run) -> None:
    out = run_sample("nested")
    assert "pending: ['review/approve']" in out
    assert "outputs: ['published: All about owls.']" in out
    assert re.search(r'subgraph review \["review \(review\)"\]', out)


def test_agent_chain_with_scripted_agents(run_sample: Run) -> None:
    out = run_sample("agent_chain", OPENAI_API_KEY="").splitlines()
    assert out == ["editor turns kept in the snapshot: 4",
                   "scripted: ['Owls fly silently at night.', 'Bats sleep upside down.']"]


def test_workflow_agent_continues_from_a_saved_session(run_sample: Run, tmp_path: Path) -> None:
    assert run_sample("workflow_agent").splitlines() == [
        "the agent asks: request_info {'confirm': 'a table for two at eight'}",
        "the agent says: booked: a table for two at eight"]
    assert (tmp_path / "state" / "sessions").is_dir()


def test_functional_resume_replays_recorded_steps(run_sample: Run) -> None:
    assert run_sample("functional").splitlines() == [
        "paused after ['fetch', 'advise']",
        "outputs: ['packed a t-shirt'] steps run: ['fetch', 'advise']"]


def test_orchestrations(run_sample: Run) -> None:
    out = run_sample("orchestrations").splitlines()
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
    out = run_sample("cosmos_hosting", CHECKFLOW_COSMOS_ENDPOINT=cosmos_emulator.endpoint,
                     CHECKFLOW_COSMOS_KEY=cosmos_emulator.key,
                     CHECKFLOW_COSMOS_VERIFY_TLS="0").splitlines()
    assert re.fullmatch(r"article-\w+: awaiting_responses, asking \w+", out[0])
    assert re.fullmatch(
        r"article-\w+: idle, outputs \['published: Five things to know about owls.'\]", out[1])


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
