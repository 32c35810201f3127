"""Checkpoint storages: in memory and on the local file system.

The Azure Cosmos DB storage lives in ``checkflow.storage.cosmos`` (extra ``cosmos``) and is
imported only from there. Backends implement the ``CheckpointStorage`` contract and must
never import the workflow engine or the agents.
"""

from checkflow.storage._file import FileCheckpointStorage
from checkflow.storage._memory import InMemoryCheckpointStorage
from checkflow.storage._verify import VerifyReport

__all__ = ["FileCheckpointStorage", "InMemoryCheckpointStorage", "VerifyReport"]
