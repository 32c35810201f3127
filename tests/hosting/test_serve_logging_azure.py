"""``serve``'s logging keeps the Azure SDK's per-request INFO lines out unless debugging
(they came before the listening banner on Cosmos DB and buried the server's own logs)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from checkflow.cli._logging import LogSettings, configure_logging


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root, azure = logging.getLogger(), logging.getLogger("azure")
    handlers, level, azure_level = list(root.handlers), root.level, azure.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    azure.setLevel(azure_level)


@pytest.mark.parametrize(("level", "azure_info"), [("info", False), ("warning", False),
                                                    ("debug", True)])
def test_azure_request_logs_only_when_debugging(level: str, azure_info: bool) -> None:
    logging.getLogger("azure").setLevel(logging.NOTSET)
    configure_logging(LogSettings(level=level))
    logger = logging.getLogger("azure.cosmos._cosmos_http_logging_policy")
    assert logger.isEnabledFor(logging.INFO) is azure_info
    assert logging.getLogger("checkflow").isEnabledFor(logging.INFO) is (level != "warning")
