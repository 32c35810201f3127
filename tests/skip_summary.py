"""A pytest plugin: the summary groups skips (and expected failures) by reason.

``addopts`` is ``-rfEX``: failures, errors and unexpected passes are still listed one by one,
next to the result line, but pytest lists no skip. Instead each reason is one line with its
count, where ``-ra`` printed dozens of near-identical lines (one per Cosmos DB account
parameter, say) above the result. ``-rs`` or ``-ra`` brings pytest's own per-test lines
back, and then this summary stays out of the way.
"""

from __future__ import annotations

from collections import Counter

import pytest

_GROUPED = (("skipped", "SKIPPED"), ("xfailed", "XFAIL"))


def _reason(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return str(report.wasxfail) or "(no reason given)"
    longrepr = report.longrepr
    message = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return message.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per reason, most frequent first, unless pytest lists skips itself."""
    if "s" in terminalreporter.reportchars:
        return
    for stat, label in _GROUPED:
        reasons = Counter(_reason(report) for report in terminalreporter.stats.get(stat, ()))
        if not reasons:
            continue
        terminalreporter.write_sep("=", f"{sum(reasons.values())} {stat}, by reason")
        for reason, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0])):
            terminalreporter.write_line(f"{label} {count:>4} x {reason}")
