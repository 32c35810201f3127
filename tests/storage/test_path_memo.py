"""``PathMemo``: the paths a store names per id are built once, and never grow without bound."""

from __future__ import annotations

from pathlib import Path

from checkflow._fs import PathMemo, safe_name
from checkflow.sessions import FileSessionStore
from checkflow.storage import FileCheckpointStorage


def test_an_id_is_named_once_and_the_same_path_comes_back() -> None:
    made: list[str] = []

    def make(key: str) -> Path:
        made.append(key)
        return Path("/root") / key

    memo = PathMemo(make)
    first = memo("a")
    assert memo("a") is first
    assert memo("b") == Path("/root/b")
    assert made == ["a", "b"]


def test_past_its_size_the_memo_starts_again_and_still_answers_right() -> None:
    made: list[str] = []
    memo = PathMemo(lambda key: made.append(key) or key.upper(), size=2)
    assert [memo("a"), memo("b"), memo("c"), memo("a")] == ["A", "B", "C", "A"]
    assert made == ["a", "b", "c", "a"]  # "c" found it full: "a" was named again
    assert len(memo._items) <= 2


def test_the_stores_name_the_same_files_as_before(tmp_path: Path) -> None:
    sessions = FileSessionStore(tmp_path / "s")
    assert sessions.path_for("x") == tmp_path / "s" / f"{safe_name('x')}.session"
    assert sessions.path_for("x") is sessions.path_for("x")
    assert sessions.path_for("x") != sessions.path_for("y")
    storage = FileCheckpointStorage(tmp_path / "c")
    files = storage._files("cp")
    assert files.log == files.folder / "log" and files.lock == files.folder / "lock"
    assert files.folder == (tmp_path / "c").resolve() / safe_name("cp")
    assert files.source == str(files.log)
