"""``serve --loop``: which event loop the server runs on, from the flag or ``CHECKFLOW_LOOP``.

uvloop is made unimportable with ``sys.modules["uvloop"] = None`` (the import system then
raises ``ImportError`` as for a missing package). A served process on each loop is in
``tests/e2e/test_serve_loop_e2e.py``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from typing import Any

import pytest

from checkflow.cli import main
from checkflow.cli._main import _parser
from checkflow.cli._serve import event_loop
from checkflow.cli._serve_options import ServeOptions, serve_options

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


def options(argv: list[str], env: dict[str, str]) -> ServeOptions:
    return serve_options(_parser().parse_args(["serve", "hosting_flows:build", *argv]), env)


def test_the_loop_comes_from_the_flag_then_the_variable_then_auto() -> None:
    assert options([], {}).loop == "auto"
    assert options([], {"CHECKFLOW_LOOP": "asyncio"}).loop == "asyncio"
    assert options(["--loop", "uvloop"], {"CHECKFLOW_LOOP": "asyncio"}).loop == "uvloop"


def test_a_bad_loop_variable_names_it_and_its_choices() -> None:
    with pytest.raises(ValueError, match=r"CHECKFLOW_LOOP: expected one of auto, asyncio, "
                                         r"uvloop, got 'tokio'"):
        options([], {"CHECKFLOW_LOOP": "tokio"})


def test_a_bad_loop_flag_exits_2(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(["serve", "m:a", "--loop", "tokio"])
    assert exited.value.code == 2
    assert "invalid choice: 'tokio'" in capsys.readouterr().err


def test_asyncio_is_asyncios_own_loop() -> None:
    name, factory = event_loop("asyncio")
    loop = factory()
    try:
        assert name == "asyncio"
        assert type(loop).__module__.startswith("asyncio")
    finally:
        loop.close()


def test_auto_without_uvloop_is_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)
    name, factory = event_loop("auto")
    assert (name, factory) == ("asyncio", asyncio.new_event_loop)


def test_uvloop_without_uvloop_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)
    with pytest.raises(ImportError, match=r"checkflow\[hosting\]"):
        event_loop("uvloop")
    assert main(["serve", "hosting_flows:build", "--loop", "uvloop", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("checkflow: error: --loop uvloop needs uvloop")
    assert "checkflow[hosting]" in err


@pytest.mark.skipif(not HAS_UVLOOP, reason="uvloop is not installed (extra hosting)")
def test_auto_with_uvloop_is_uvloop() -> None:
    import uvloop

    name, factory = event_loop("auto")
    loop = factory()
    try:
        assert name == "uvloop"
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()
