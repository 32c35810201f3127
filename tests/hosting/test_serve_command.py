"""``python -m checkflow serve``: bad targets, adapters and storages fail with one clear line."""

from __future__ import annotations

import pytest

from checkflow.cli import main
from checkflow.hosting._serve import load_object


def test_a_target_is_loaded_by_module_and_attribute() -> None:
    workflow = load_object("hosting_flows:build")
    assert callable(workflow)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["serve", "hosting_flows"], "MODULE:ATTR"),
        (["serve", "hosting_flows:nothing_here"], "no attribute 'nothing_here'"),
        (["serve", "no_such_module_anywhere:x"], "no_such_module_anywhere"),
        (["serve", "hosting_flows:build", "--adapters", "native,telepathy"], "telepathy"),
        (["serve", "hosting_flows:build", "--storage", "ftp:somewhere"], "ftp"),
        (["serve", "hosting_flows:Order"], "Workflow"),
    ],
)
def test_a_bad_serve_command_exits_2_naming_the_problem(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--port", "0"]) == 2
    assert said in capsys.readouterr().err
