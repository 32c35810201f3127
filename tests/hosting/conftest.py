"""Fixtures for the hosting tests: a gated three-superstep workflow and hosts on real stores."""

from __future__ import annotations

from pathlib import Path

import pytest
from hosting_flows import Gate, build

from checkflow.hosting import WorkflowHost
from checkflow.sessions import FileSessionStore
from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import Workflow


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def workflow(gate: Gate) -> Workflow:
    return build(gate)


@pytest.fixture
def host(workflow: Workflow) -> WorkflowHost:
    """A host on the in-memory defaults."""
    return WorkflowHost(workflow)


@pytest.fixture
def file_host(workflow: Workflow, tmp_path: Path) -> WorkflowHost:
    """A host on file storage (sessions and checkpoints under tmp_path)."""
    return WorkflowHost(
        workflow,
        session_store=FileSessionStore(tmp_path / "sessions"),
        checkpoint_storage=FileCheckpointStorage(tmp_path / "checkpoints"),
    )
