"""``--adapters native,a2a_push_flows:push_adapter``: the A2A adapter as the push end-to-end
tests need it: webhooks on loopback allowed (the test's receiver), quick retries, no rescan
(every delivery comes from a turn's end or a start-up scan)."""

from __future__ import annotations

from checkflow.adapters.a2a import A2AAdapter, PushRetry

RETRY = PushRetry(attempts=40, first_delay=0.05, factor=2.0, max_delay=0.4, timeout=10.0,
                  rescan_seconds=3600.0)


def push_adapter(public_url: str | None = None) -> A2AAdapter:
    return A2AAdapter(public_url=public_url, push_allow_local=True, push_retry=RETRY)
