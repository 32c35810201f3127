"""``python -m checkflow serve``: bad targets, adapters and storages fail with one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkflow.cli import main
from checkflow.cli._serve import load_object
from checkflow.cli._storage_url import COSMOS_SETTINGS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_a_target_is_loaded_by_module_and_attribute() -> None:
    workflow = load_object("hosting_flows:build")
    assert callable(workflow)


def test_an_adapter_named_by_its_class_is_instantiated() -> None:
    from test_native_api import EchoAdapter

    from checkflow.cli._serve import _adapters

    (adapter,) = _adapters(["native", "test_native_api:EchoAdapter"])
    assert isinstance(adapter, EchoAdapter)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["serve", "hosting_flows"], "MODULE:ATTR"),
        (["serve", "hosting_flows:nothing_here"], "no attribute 'nothing_here'"),
        (["serve", "no_such_module_anywhere:x"], "no_such_module_anywhere"),
        (["serve", "hosting_flows:build", "--adapters", "native,telepathy"], "telepathy"),
        (["serve", "hosting_flows:build", "--storage", "ftp:somewhere"], "ftp"),
        (["serve", "hosting_flows:Order"], "Workflow"),
        (["serve", "hosting_flows:build", "--authenticate", "hosting_flows:who"], "'who'"),
    ],
)
def test_a_bad_serve_command_exits_2_naming_the_problem(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--port", "0"]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("command", [["serve", "hosting_flows:build", "--port", "0"],
                                     ["checkpoints", "ls"]])
def test_cosmos_storage_without_its_environment_names_the_missing_variables(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in COSMOS_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHECKFLOW_COSMOS_ENDPOINT", "http://127.0.0.1:9")
    assert main([*command, "--storage", "cosmos:"]) == 2
    err = capsys.readouterr().err
    assert "CHECKFLOW_COSMOS_KEY" in err and "CHECKFLOW_COSMOS_ENDPOINT" not in err


def test_the_readme_documents_every_cosmos_setting() -> None:
    text = README.read_text()
    assert "## Serving" in text
    assert [name for name in COSMOS_SETTINGS if f"`{name}`" not in text] == []


async def test_connections_accepted_by_the_served_app_have_tcp_nodelay() -> None:
    import socket

    import httpx
    from hosting_flows import build
    from served import served

    from checkflow.hosting import WorkflowHost, create_app

    async with served(create_app(WorkflowHost(build()))) as (url, server), \
            httpx.AsyncClient(base_url=url) as client:
        assert (await client.get("/healthz")).status_code == 200  # keeps the connection open
        (connection,) = server.server_state.connections
        accepted = connection.transport.get_extra_info("socket")
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_public_url_reaches_an_adapter_factory_that_takes_it() -> None:
    from checkflow.adapters.a2a import A2AAdapter
    from checkflow.cli._serve import _adapters

    (adapter,) = _adapters(["a2a"], public_url="https://agents.example.com")
    assert isinstance(adapter, A2AAdapter)
    assert "https://agents.example.com" in repr(vars(adapter))
