"""Suite-wide test configuration: hypothesis profiles, shared fixtures, the skip summary."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# the session-scoped Cosmos DB emulator and per-test containers (tests/cosmos_emulator.py);
# skips grouped by reason in the summary (tests/skip_summary.py); the support sample's refund
# ledger (tests/support_ledger.py)
pytest_plugins = ["cosmos_emulator", "skip_summary", "support_ledger"]

# CI: fixed seed, no deadline (a shared 2-core machine has no reliable timing).
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
