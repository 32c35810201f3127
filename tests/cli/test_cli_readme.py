"""The README's "Command line" section lists every command and flag the parser has, and no
other: a flag added to the parser without a line in the README fails here, and so does a
README line for a flag or a command that is gone."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from checkflow.cli._main import _parser, leaf_parsers

README = Path(__file__).resolve().parents[2] / "README.md"
_FLAG = re.compile(r"(?<![\w-])--?[a-z][a-z0-9-]*")
_COMMAND = re.compile(r"- `checkflow((?: [a-z][a-z0-9-]*)*)([^`]*)`")
_FLAGS = re.compile(r"  - ((?:`[^`]+`,?\s*)+)")


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings
            if not isinstance(action, argparse._HelpAction)}


def _positionals(parser: argparse.ArgumentParser) -> list[str]:
    return [str(a.metavar or a.dest) for a in parser._actions
            if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]


def documented(text: str) -> dict[tuple[str, ...], tuple[str, set[str]]]:
    """``{command path: (its synopsis after the path, its flags)}`` from the section's list:
    a ``- `checkflow PATH ARGS`: ...`` line, then ``  - `--flag X`, `-f`: ...`` lines."""
    section = text.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    found: dict[tuple[str, ...], tuple[str, set[str]]] = {}
    current: tuple[str, ...] | None = None
    for line in _bullets(section):
        command = _COMMAND.match(line)
        if command is not None:
            current = tuple(command.group(1).split())
            assert current not in found, f"{current} is listed twice"
            found[current] = (command.group(2).strip(), set())
            continue
        flags = _FLAGS.match(line)
        if flags is not None:
            assert current is not None, line
            spans = re.findall(r"`([^`]+)`", flags.group(1))
            found[current][1].update(f for span in spans for f in _FLAG.findall(span))
    return found


def _bullets(section: str) -> list[str]:
    """The section's lines, each wrapped bullet joined with its continuation lines."""
    lines: list[str] = []
    for line in section.splitlines():
        if lines and line.startswith("    ") and not line.lstrip().startswith("- "):
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return lines


def test_the_readme_lists_every_command_and_flag_of_the_parser_and_no_other() -> None:
    parser = _parser()
    actual = {(): (parser, _flags(parser))}
    actual.update({path: (leaf, _flags(leaf)) for path, leaf in leaf_parsers(parser)})
    listed = documented(README.read_text(encoding="utf-8"))
    assert sorted(listed) == sorted(actual), "commands differ"
    for path, (leaf, flags) in actual.items():
        synopsis, written = listed[path]
        name = " ".join(("checkflow", *path))
        assert flags - written == set(), f"{name}: flags missing from the README"
        assert written - flags == set(), f"{name}: the README lists flags the parser lacks"
        for positional in _positionals(leaf):
            assert positional in synopsis, f"{name}: {positional} missing from the README"


def test_a_flag_missing_from_either_side_is_found() -> None:
    text = README.read_text(encoding="utf-8")
    listed = documented(text)
    assert "--public-url" in listed[("serve",)][1]
    assert "--quiet" in listed[("checkpoints", "verify")][1]
    dropped = documented(text.replace("  - `--deleted`:", "  - deleted:"))
    assert "--deleted" not in dropped[("conversations", "ls")][1]
