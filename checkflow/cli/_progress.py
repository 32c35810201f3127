"""The progress line of long commands (``migrate-v1``, ``checkpoints prune``, ``export``,
``verify``): items done of the total, and the rate, on stderr.

Drawn only for a person: when stderr is a terminal and ``--quiet`` was not given; a pipe, a
file or a CI log gets nothing, so a script's stderr holds only errors. The line is redrawn in
place (``\\r``) at most ten times a second, and each stage ends on a line of its own with
``done`` (as git's own progress does). This module must never write to stdout.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["Progress", "progress_line"]

_CLEAR = "\x1b[K"  # erase to the end of the line: a shorter redraw leaves nothing behind


class Progress:
    """``progress(what, done, total)`` shows ``what: done/total (rate/s)``; a new ``what``
    ends the previous stage's line. Without a stream every call does nothing.

    The same callable is what the library's hooks take (``migrate_v1(progress=...)``,
    ``find_orphan_checkpoints(progress=...)``); it may be called from a worker thread.
    """

    def __init__(self, stream: TextIO | None, *, interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._interval = interval
        self._clock = clock
        self._what: str | None = None
        self._done = self._total = 0
        self._started = self._drawn = self._updated = 0.0

    @property
    def shown(self) -> bool:
        """Whether anything is drawn (stderr is a terminal and ``--quiet`` was not given)."""
        return self._stream is not None

    def __call__(self, what: str, done: int, total: int) -> None:
        if self._stream is None:
            return
        now = self._clock()
        if what != self._what:
            self.close()
            self._what, self._started = what, now
        elif done < total and now - self._drawn < self._interval:
            self._done, self._total, self._updated = done, total, now
            return
        self._done, self._total, self._drawn, self._updated = done, total, now, now
        self._draw(now, "")

    def close(self) -> None:
        """End the current stage's line (``, done.`` when every item is done)."""
        if self._stream is None or self._what is None:
            return
        finished = self._total > 0 and self._done >= self._total
        self._draw(self._updated, ", done.\n" if finished else "\n")  # the rate as last seen
        self._what = None

    def _draw(self, now: float, end: str) -> None:
        assert self._stream is not None
        elapsed = now - self._started
        rate = f" ({_rate(self._done / elapsed)}/s)" if elapsed > 0 and self._done else ""
        self._stream.write(f"\r{self._what}: {self._done}/{self._total}{rate}{_CLEAR}{end}")
        self._stream.flush()


def _rate(per_second: float) -> str:
    if per_second >= 10_000:
        return f"{per_second / 1000:.0f}k"
    return f"{per_second:.1f}" if per_second < 10 else f"{per_second:.0f}"


@contextmanager
def progress_line(*, quiet: bool, stdout_is_the_output: bool = False) -> Iterator[Progress]:
    """A ``Progress`` on stderr when a person is watching it, ended on the way out.

    ``stdout_is_the_output`` (``export``, which streams its document) also stays silent when
    stdout is the same terminal: the line would land in the middle of the document.
    """
    err = sys.stderr
    shown = not quiet and _is_terminal(err) and not (
        stdout_is_the_output and _is_terminal(sys.stdout))
    progress = Progress(err if shown else None)
    try:
        yield progress
    finally:
        progress.close()


def _is_terminal(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # replaced by an object without one, or closed
        return False
