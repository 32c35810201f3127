"""Azure Cosmos DB storage: ``CosmosCheckpointStorage`` and ``CosmosSessionStore``.

Needs the ``cosmos`` extra (``pip install 'checkflow[cosmos]'``); importing this package
without it raises an ``ImportError`` saying so. ``checkflow.storage`` never imports it.
"""

from checkflow.storage.cosmos._checkpoints import CosmosCheckpointStorage
from checkflow.storage.cosmos._sessions import CosmosSessionStore

__all__ = ["CosmosCheckpointStorage", "CosmosSessionStore"]
