"""The Foundry hosted-agent container: who the agent is, read from the container's environment.

The platform starts a hosted agent's container with its identity in the environment
(``FOUNDRY_AGENT_NAME``, ``FOUNDRY_AGENT_VERSION``; the names Foundry's own host reads into its
``AgentConfig``) and, for a container serving one session, ``FOUNDRY_AGENT_SESSION_ID``.
``ContainerEnvironment`` is read once, when the adapter's routes are built. This module must
never read a request or call the host.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["AGENT_NAME", "AGENT_VERSION", "SESSION_ID", "ContainerEnvironment"]

AGENT_NAME = "FOUNDRY_AGENT_NAME"
AGENT_VERSION = "FOUNDRY_AGENT_VERSION"
SESSION_ID = "FOUNDRY_AGENT_SESSION_ID"


@dataclass(frozen=True, slots=True)
class ContainerEnvironment:
    """The container's agent name and version, and the session it serves (each ``None`` when
    the platform did not set it)."""

    agent_name: str | None = None
    agent_version: str | None = None
    session_id: str | None = None

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> ContainerEnvironment:
        """The values in ``environ`` (default ``os.environ``); blank ones count as unset."""
        source = os.environ if environ is None else environ

        def value(name: str) -> str | None:
            return source.get(name, "").strip() or None

        return cls(value(AGENT_NAME), value(AGENT_VERSION), value(SESSION_ID))

    def agent_reference(self, default_name: str) -> dict[str, Any]:
        """The ``agent_reference`` of this container's responses: its agent name (else
        ``default_name``, the served workflow's or agent's) and version when set."""
        reference: dict[str, Any] = {"type": "agent_reference",
                                     "name": self.agent_name or default_name}
        if self.agent_version is not None:
            reference["version"] = self.agent_version
        return reference
